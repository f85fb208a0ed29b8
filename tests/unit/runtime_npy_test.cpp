// Tests of runtime/npy.{h,cpp}: round trips, files numpy wrote and reads back,
// rejection of malformed files, name sanitizing, dtype and float16 helpers.
#include "npy.h"
#include "tilegraph_model.h"

#include "driver/process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace tilegraph::rt;

namespace {

const int kAllDtypes[] = {TG_F32, TG_F64, TG_F16, TG_I8, TG_U8, TG_I16,
                          TG_U16, TG_I32, TG_U32, TG_I64, TG_U64, TG_BOOL};

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tg_npy_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static void write_bytes(const std::string& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
  }
  static std::string read_bytes(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  // Runs a python3 script with numpy; false (and the test should skip) if
  // python3 or numpy is not available.
  bool run_python(const std::string& script) {
    std::string python = TG_RUNTIME_PYTHON3;
    tilegraph::driver::ProcessOptions quiet;
    quiet.stderr_path = "/dev/null";
    if (python.empty() || !tilegraph::driver::run_process({python, "-c", "import numpy"}, quiet).ok()) {
      return false;
    }
    std::string file = path("script.py");
    std::ofstream(file) << "import numpy as np\nimport os\nimport sys\nos.chdir(sys.argv[1])\n" << script;
    EXPECT_TRUE(tilegraph::driver::run_process({python, file, dir_.string()}).ok())
        << "python script failed:\n" << script;
    return true;
  }

  std::string error_of(const std::string& p) {
    try {
      read_npy(p);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

// Bytes of element i for each dtype: a recognizable, dtype-exact value.
NpyArray sample(int dtype, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = shape;
  size_t n = size_t(shape_num_elements(shape));
  size_t elem = dtype_size(dtype);
  a.data.resize(n * elem);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* p = a.data.data() + i * elem;
    double v = double(i) - 3.5;
    switch (dtype) {
      case TG_F32: { float f = float(v) * 0.25f; std::memcpy(p, &f, 4); break; }
      case TG_F64: { double d = v * 1e-3; std::memcpy(p, &d, 8); break; }
      case TG_F16: { uint16_t h = float_to_half(float(v)); std::memcpy(p, &h, 2); break; }
      case TG_BOOL: *p = uint8_t(i % 3 == 0); break;
      default: {
        // Integers: i * 37 - 100 truncated to the width (wraps for unsigned).
        int64_t x = int64_t(i) * 37 - 100;
        std::memcpy(p, &x, elem);
      }
    }
  }
  return a;
}

TEST_F(NpyTest, RoundTripsEveryDtypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3, 4}, {0, 3}, {1, 1, 1, 7}};
  for (int dtype : kAllDtypes) {
    for (const auto& shape : shapes) {
      NpyArray a = sample(dtype, shape);
      std::string p = path("rt.npy");
      write_npy(p, a);
      NpyArray b = read_npy(p);
      EXPECT_EQ(b.dtype, dtype) << dtype_name(dtype);
      EXPECT_EQ(b.shape, shape) << dtype_name(dtype) << " " << format_shape(shape);
      EXPECT_EQ(b.data, a.data) << dtype_name(dtype) << " " << format_shape(shape);
    }
  }
}

TEST_F(NpyTest, WritesNumpysExactVersion1Header) {
  NpyArray a = sample(TG_F32, {2, 3});
  write_npy(path("a.npy"), a);
  std::string bytes = read_bytes(path("a.npy"));
  // numpy pads the header so the data starts at a multiple of 64: here 128.
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8), 128 - 10);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(bytes.substr(10, 118), dict + std::string(118 - dict.size() - 1, ' ') + "\n");
  EXPECT_EQ(std::memcmp(bytes.data() + 128, a.data.data(), 24), 0);

  write_npy(path("b.npy"), sample(TG_BOOL, {3}));
  EXPECT_NE(read_bytes(path("b.npy")).find("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
  write_npy(path("c.npy"), sample(TG_I64, {}));
  EXPECT_NE(read_bytes(path("c.npy")).find("'shape': (), }"), std::string::npos);
}

TEST_F(NpyTest, ReadsWhatNumpyWrites) {
  bool ran = run_python(R"PY(
shape = (2, 3)
for name in ['float32', 'float64', 'float16', 'int8', 'uint8', 'int16', 'uint16',
             'int32', 'uint32', 'int64', 'uint64']:
    a = (np.arange(6).reshape(shape) * 37 - 100).astype(name) if 'int' in name else \
        ((np.arange(6).reshape(shape) - 3.5) * 0.25).astype(name)
    np.save(name + '.npy', a)
np.save('bool.npy', np.array([True, False, False, True]))
np.save('scalar.npy', np.float32(1.5))
np.save('fortran.npy', np.asfortranarray(np.zeros((2, 3), np.float32)))
np.save('bigendian.npy', np.arange(3, dtype='>f4'))
np.save('complex.npy', np.zeros(2, np.complex64))
with open('v2.npy', 'wb') as f:
    np.lib.format.write_array(f, np.arange(5, dtype=np.int32), version=(2, 0))
with open('v3.npy', 'wb') as f:
    np.lib.format.write_array(f, np.arange(5, dtype=np.int32), version=(3, 0))
)PY");
  if (!ran) GTEST_SKIP() << "python3 with numpy not available";

  NpyArray f32 = read_npy(path("float32.npy"));
  EXPECT_EQ(f32.dtype, TG_F32);
  EXPECT_EQ(f32.shape, (std::vector<int64_t>{2, 3}));
  const float* f = reinterpret_cast<const float*>(f32.data.data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f[i], (float(i) - 3.5f) * 0.25f);

  NpyArray f64 = read_npy(path("float64.npy"));
  EXPECT_EQ(f64.dtype, TG_F64);
  EXPECT_EQ(reinterpret_cast<const double*>(f64.data.data())[5], 0.375);

  NpyArray f16 = read_npy(path("float16.npy"));
  EXPECT_EQ(f16.dtype, TG_F16);
  EXPECT_EQ(half_to_float(reinterpret_cast<const uint16_t*>(f16.data.data())[0]), -0.875f);

  NpyArray i8 = read_npy(path("int8.npy"));
  EXPECT_EQ(i8.dtype, TG_I8);
  EXPECT_EQ(int8_t(i8.data[5]), int8_t(85));
  NpyArray u8 = read_npy(path("uint8.npy"));
  EXPECT_EQ(u8.dtype, TG_U8);
  EXPECT_EQ(u8.data[0], uint8_t(-100));
  EXPECT_EQ(read_npy(path("int16.npy")).dtype, TG_I16);
  EXPECT_EQ(read_npy(path("uint16.npy")).dtype, TG_U16);
  EXPECT_EQ(read_npy(path("int32.npy")).dtype, TG_I32);
  EXPECT_EQ(read_npy(path("uint32.npy")).dtype, TG_U32);
  NpyArray i64 = read_npy(path("int64.npy"));
  EXPECT_EQ(i64.dtype, TG_I64);
  EXPECT_EQ(reinterpret_cast<const int64_t*>(i64.data.data())[4], 48);
  NpyArray u64 = read_npy(path("uint64.npy"));
  EXPECT_EQ(u64.dtype, TG_U64);
  EXPECT_EQ(reinterpret_cast<const uint64_t*>(u64.data.data())[0], uint64_t(-100));

  NpyArray b = read_npy(path("bool.npy"));
  EXPECT_EQ(b.dtype, TG_BOOL);
  EXPECT_EQ(b.data, (std::vector<uint8_t>{1, 0, 0, 1}));

  NpyArray s = read_npy(path("scalar.npy"));
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(*reinterpret_cast<const float*>(s.data.data()), 1.5f);

  for (const char* v : {"v2.npy", "v3.npy"}) {
    NpyArray a = read_npy(path(v));
    EXPECT_EQ(a.dtype, TG_I32) << v;
    EXPECT_EQ(a.shape, std::vector<int64_t>{5}) << v;
    EXPECT_EQ(reinterpret_cast<const int32_t*>(a.data.data())[4], 4) << v;
  }

  EXPECT_NE(error_of(path("fortran.npy")).find(": fortran_order=True is not supported"), std::string::npos)
      << error_of(path("fortran.npy"));
  EXPECT_EQ(error_of(path("bigendian.npy")),
            path("bigendian.npy") +
                ": unsupported dtype '>f4' (big-endian; use arr.astype(arr.dtype.newbyteorder('<')))");
  EXPECT_EQ(error_of(path("complex.npy")), path("complex.npy") + ": unsupported dtype '<c8'");
}

TEST_F(NpyTest, NumpyReadsWhatWeWrite) {
  for (int dtype : kAllDtypes) {
    write_npy(path(dtype_name(dtype) + ".npy"), sample(dtype, {2, 3}));
  }
  write_npy(path("scalar.npy"), sample(TG_F64, {}));
  bool ran = run_python(R"PY(
i = np.arange(6).reshape(2, 3)
for name in ['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64']:
    a = np.load(name + '.npy')
    assert a.dtype == np.dtype(name) and a.shape == (2, 3), (name, a.dtype, a.shape)
    assert (a == (i * 37 - 100).astype(name)).all(), (name, a)
assert (np.load('float32.npy') == ((i - 3.5) * 0.25).astype(np.float32)).all()
assert (np.load('float64.npy') == (i - 3.5) * 1e-3).all()
assert (np.load('float16.npy') == (i - 3.5).astype(np.float16)).all()
assert (np.load('bool.npy') == (i % 3 == 0)).all() and np.load('bool.npy').dtype == np.bool_
s = np.load('scalar.npy')
assert s.shape == () and s == -3.5e-3
)PY");
  if (!ran) GTEST_SKIP() << "python3 with numpy not available";
}

TEST_F(NpyTest, RejectsMalformedFilesNamingFileAndCause) {
  std::string good_path = path("good.npy");
  write_npy(good_path, sample(TG_F32, {2, 3}));
  std::string good = read_bytes(good_path);

  EXPECT_EQ(error_of(path("missing.npy")), path("missing.npy") + ": cannot open: No such file or directory");

  write_bytes(path("garbage.npy"), "hello, this is not numpy at all");
  EXPECT_EQ(error_of(path("garbage.npy")), path("garbage.npy") + ": not a .npy file (bad magic)");
  write_bytes(path("empty.npy"), "");
  EXPECT_EQ(error_of(path("empty.npy")), path("empty.npy") + ": not a .npy file (bad magic)");

  write_bytes(path("short_header.npy"), good.substr(0, 30));
  EXPECT_EQ(error_of(path("short_header.npy")), path("short_header.npy") + ": truncated header");
  write_bytes(path("no_len.npy"), good.substr(0, 9));
  EXPECT_EQ(error_of(path("no_len.npy")), path("no_len.npy") + ": truncated header");

  write_bytes(path("short_data.npy"), good.substr(0, good.size() - 5));
  EXPECT_EQ(error_of(path("short_data.npy")),
            path("short_data.npy") + ": truncated data: shape [2,3] of float32 needs 24 bytes, file has 19");

  write_bytes(path("trailing.npy"), good + "xx");
  EXPECT_EQ(error_of(path("trailing.npy")),
            path("trailing.npy") + ": 2 unexpected bytes after the data of shape [2,3]");

  std::string v9 = good;
  v9[6] = 9;
  write_bytes(path("v9.npy"), v9);
  EXPECT_EQ(error_of(path("v9.npy")), path("v9.npy") + ": unsupported .npy format version 9.0");

  // Hand-made headers (10-byte prefix + 118-byte dict) for the parser's errors.
  auto with_header = [&](const std::string& name, std::string dict) {
    dict.resize(117, ' ');
    dict += '\n';
    write_bytes(path(name), std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict + std::string(24, '\0'));
    return error_of(path(name));
  };
  EXPECT_EQ(with_header("c8.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }"),
            path("c8.npy") + ": unsupported dtype '<c8'");
  EXPECT_EQ(with_header("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"),
            path("fortran.npy") +
                ": fortran_order=True is not supported (save a C-order array, e.g. np.ascontiguousarray)");
  EXPECT_EQ(with_header("nokey.npy", "{'descr': '<f4', 'shape': (2, 3), }"),
            path("nokey.npy") + ": malformed header: header lacks 'descr', 'fortran_order' or 'shape'");
  EXPECT_EQ(with_header("extra.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}"),
            path("extra.npy") + ": malformed header: unexpected key 'x' in header");
  EXPECT_EQ(with_header("neg.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }"),
            path("neg.npy") + ": negative dimension in shape [-6]");
  EXPECT_EQ(with_header("struct.npy", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,)}"),
            path("struct.npy") + ": unsupported dtype (structured arrays are not supported)");
  EXPECT_EQ(with_header("notdict.npy", "[1, 2, 3]"), path("notdict.npy") + ": malformed header: expected '{'");
  // Python 2 wrote long dims with an L suffix; still a valid file.
  EXPECT_EQ(with_header("long.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }"),
            "(no error)");
}

// Every prefix of a valid file, and every single-byte corruption of its
// header, must give a clean std::runtime_error (or, rarely, a valid array).
TEST_F(NpyTest, CorruptionsNeverCrash) {
  write_npy(path("good.npy"), sample(TG_I16, {3, 5}));
  std::string good = read_bytes(path("good.npy"));
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(good.data());
  for (size_t len = 0; len < good.size(); ++len) {
    EXPECT_THROW(parse_npy(bytes, len, "prefix"), std::runtime_error) << len;
  }
  size_t parsed = 0;
  for (size_t i = 0; i < 128; ++i) {
    for (int v : {0, 1, 0x20, int('('), int(')'), int(','), int('\''), int('-'), int('9'), 0x7f, 0xff}) {
      std::string bad = good;
      bad[i] = char(v);
      try {
        NpyArray a = parse_npy(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), "corrupt");
        EXPECT_EQ(a.data.size(), size_t(a.num_elements()) * dtype_size(a.dtype));
        ++parsed;
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("corrupt: ", 0), 0u) << e.what();
      }
    }
  }
  EXPECT_GT(parsed, 0u);  // e.g. the padding spaces may change freely
}

TEST_F(NpyTest, WriteRejectsDataOfTheWrongSize) {
  NpyArray a = sample(TG_I32, {2, 2});
  a.data.pop_back();
  try {
    write_npy(path("bad.npy"), a);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), path("bad.npy") + ": data has 15 bytes but shape [2,2] of int32 needs 16");
  }
  NpyArray u;
  u.dtype = 8;  // ONNX string: not a tensor dtype here
  EXPECT_THROW(write_npy(path("str.npy"), u), std::runtime_error);
  EXPECT_THROW(write_npy(path("no_such_dir/x.npy"), sample(TG_F32, {1})), std::runtime_error);
}

TEST(NpyNames, SanitizeKeepsSafeCharactersOnly) {
  EXPECT_EQ(sanitize_name("input_ids"), "input_ids");
  EXPECT_EQ(sanitize_name("input:0"), "input_0");
  EXPECT_EQ(sanitize_name("/model/layer.0/Add_output_0"), "_model_layer.0_Add_output_0");
  EXPECT_EQ(sanitize_name("a b\tc\\d\"e"), "a_b_c_d_e");
  EXPECT_EQ(sanitize_name("Ab-9.z_"), "Ab-9.z_");
  EXPECT_EQ(sanitize_name("caf\xc3\xa9"), "caf__");  // each UTF-8 byte replaced
  EXPECT_EQ(sanitize_name(""), "_");
}

TEST(NpyDtypes, SizesNamesAndDescriptors) {
  EXPECT_EQ(dtype_size(TG_F32), 4u);
  EXPECT_EQ(dtype_size(TG_F16), 2u);
  EXPECT_EQ(dtype_size(TG_F64), 8u);
  EXPECT_EQ(dtype_size(TG_BOOL), 1u);
  EXPECT_EQ(dtype_size(TG_I64), 8u);
  EXPECT_EQ(dtype_size(TG_U16), 2u);
  EXPECT_EQ(dtype_size(8), 0u);  // string
  EXPECT_EQ(dtype_name(TG_I64), "int64");
  EXPECT_EQ(dtype_name(TG_BOOL), "bool");
  EXPECT_EQ(dtype_name(TG_F16), "float16");
  EXPECT_EQ(dtype_name(99), "dtype(99)");
  EXPECT_TRUE(dtype_is_float(TG_F16));
  EXPECT_FALSE(dtype_is_float(TG_I32));
  for (int dtype : kAllDtypes) EXPECT_EQ(dtype_from_npy_descr(dtype_to_npy_descr(dtype)), dtype);
  EXPECT_EQ(dtype_from_npy_descr("<i1"), TG_I8);  // byte order of single bytes is irrelevant
  EXPECT_EQ(dtype_from_npy_descr(">u1"), TG_U8);
  EXPECT_EQ(dtype_from_npy_descr(">i4"), 0);
  EXPECT_EQ(dtype_from_npy_descr("<f4x"), 0);
  EXPECT_EQ(dtype_from_npy_descr("xi1"), 0);
  EXPECT_EQ(dtype_from_npy_descr("<U5"), 0);
  EXPECT_EQ(format_shape({}), "[]");
  EXPECT_EQ(format_shape({1, 128}), "[1,128]");
  EXPECT_EQ(shape_num_elements({}), 1);
  EXPECT_EQ(shape_num_elements({2, 0, 5}), 0);
  EXPECT_THROW(shape_num_elements({int64_t(1) << 40, int64_t(1) << 40}), std::runtime_error);
}

TEST(NpyHalf, KnownValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // a tie rounds to even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half(1e-10f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0xfc00), -INFINITY);
}

TEST(NpyHalf, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
}

}  // namespace
