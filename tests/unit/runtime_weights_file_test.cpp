// Tests of runtime/weights_file: mapping, empty files, and the error messages
// model.cpp passes on through tg_last_error().
#include "weights_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

class WeightsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tg_weights_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(WeightsFileTest, MapsTheWholeFileAligned) {
  std::string bytes;
  for (int i = 0; i < 100000; ++i) bytes += char(i * 7);
  std::ofstream(path("w.bin"), std::ios::binary) << bytes;

  tg_weights w;
  char err[256] = "untouched";
  ASSERT_EQ(tg_map_weights(path("w.bin").c_str(), &w, err, sizeof err), 0) << err;
  ASSERT_EQ(w.size, bytes.size());
  EXPECT_EQ(w.mapped, 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data) % 64, 0u);
  EXPECT_EQ(std::memcmp(w.data, bytes.data(), bytes.size()), 0);
  EXPECT_STREQ(err, "untouched");

  tg_unmap_weights(&w);
  EXPECT_EQ(w.data, nullptr);
  EXPECT_EQ(w.size, 0u);
  tg_unmap_weights(&w);  // a second release is harmless
  tg_unmap_weights(nullptr);
}

TEST_F(WeightsFileTest, EmptyFileIsAModelWithoutWeights) {
  std::ofstream(path("empty.bin")).close();
  tg_weights w;
  ASSERT_EQ(tg_map_weights(path("empty.bin").c_str(), &w, nullptr, 0), 0);
  EXPECT_EQ(w.data, nullptr);
  EXPECT_EQ(w.size, 0u);
  tg_unmap_weights(&w);
}

TEST_F(WeightsFileTest, ErrorsNameTheFileAndTheCause) {
  tg_weights w{reinterpret_cast<const uint8_t*>(1), 5, 1};  // garbage in: must be reset
  char err[256];
  EXPECT_NE(tg_map_weights(path("missing.bin").c_str(), &w, err, sizeof err), 0);
  EXPECT_EQ(std::string(err), "weights file '" + path("missing.bin") + "': cannot open: No such file or directory");
  EXPECT_EQ(w.data, nullptr);
  EXPECT_EQ(w.size, 0u);

  EXPECT_NE(tg_map_weights(dir_.string().c_str(), &w, err, sizeof err), 0);
  EXPECT_EQ(std::string(err), "weights file '" + dir_.string() + "': not a regular file");

  EXPECT_NE(tg_map_weights("", &w, err, sizeof err), 0);
  EXPECT_EQ(std::string(err), "weights file '': no path given");

  char tiny[12];
  EXPECT_NE(tg_map_weights(path("missing.bin").c_str(), &w, tiny, sizeof tiny), 0);
  EXPECT_EQ(std::string(tiny), "weights fil");  // truncated, still terminated
  EXPECT_NE(tg_map_weights(path("missing.bin").c_str(), &w, nullptr, 0), 0);
}

}  // namespace
