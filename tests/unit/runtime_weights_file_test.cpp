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

// weights.bin's header names the compile its weights belong to: a file from
// another tune (same size or not) is refused, with the two hashes named.
TEST_F(WeightsFileTest, CheckRefusesWeightsOfAnotherCompile) {
  auto file = [&](const std::string& name, const std::string& header, size_t weights) {
    std::string bytes = header;
    bytes.resize(TG_WEIGHTS_HEADER_BYTES, '\0');
    bytes += std::string(weights, '\x5a');
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  };
  char err[512];
  auto check = [&](const std::string& p, const char* hash, int64_t bytes) {
    tg_weights w;
    EXPECT_EQ(tg_map_weights(p.c_str(), &w, err, sizeof err), 0) << err;
    const int rc = tg_check_weights(&w, p.c_str(), hash, bytes, err, sizeof err);
    tg_unmap_weights(&w);
    return rc;
  };
  const std::string good = file("good.bin", "tilegraph-weights/1 0123456789abcdef\n", 128);
  EXPECT_EQ(check(good, "0123456789abcdef", 128), 0);

  EXPECT_NE(check(good, "fedcba9876543210", 128), 0);
  EXPECT_EQ(std::string(err), "weights file '" + good + "': written by another tune (project hash 0123456789abcdef; "
                              "this library: fedcba9876543210): weights.bin and libmodel.so come from different "
                              "tunes; run `tilegraph tune` again");

  EXPECT_NE(check(good, "0123456789abcdef", 192), 0);
  EXPECT_NE(std::string(err).find("holds 128 bytes of weights, this model needs 192"), std::string::npos) << err;

  const std::string raw = file("raw.bin", "", 64);  // headerless, as an older tilegraph wrote it
  EXPECT_NE(check(raw, "0123456789abcdef", 0), 0);
  EXPECT_NE(std::string(err).find("not a tilegraph weights file"), std::string::npos) << err;
  std::ofstream(path("short.bin")) << "tilegraph-weights/1 0123";
  EXPECT_NE(check(path("short.bin"), "0123456789abcdef", 0), 0);
  EXPECT_NE(std::string(err).find("not a tilegraph weights file"), std::string::npos) << err;
}

// tg_open_weights (what a model's create calls): mapped and checked, or
// refused with the check's message and nothing left mapped.
TEST_F(WeightsFileTest, OpenMapsAndChecksOrLeavesNothingMapped) {
  std::string bytes = "tilegraph-weights/1 0123456789abcdef\n";
  bytes.resize(TG_WEIGHTS_HEADER_BYTES, '\0');
  bytes += std::string(128, '\x5a');
  std::ofstream(path("w.bin"), std::ios::binary) << bytes;
  char err[512] = "";
  tg_weights w;
  ASSERT_EQ(tg_open_weights(path("w.bin").c_str(), "0123456789abcdef", 128, &w, err, sizeof err), 0) << err;
  EXPECT_EQ(w.size, bytes.size());
  EXPECT_EQ(w.data[TG_WEIGHTS_HEADER_BYTES], 0x5a);
  tg_unmap_weights(&w);

  EXPECT_NE(tg_open_weights(path("w.bin").c_str(), "0123456789abcdef", 192, &w, err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("holds 128 bytes of weights, this model needs 192"), std::string::npos) << err;
  EXPECT_EQ(w.data, nullptr);
  EXPECT_EQ(w.size, 0u);

  EXPECT_NE(tg_open_weights(path("missing.bin").c_str(), "0123456789abcdef", 0, &w, err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("missing.bin"), std::string::npos) << err;
  EXPECT_EQ(w.data, nullptr);
}

}  // namespace
