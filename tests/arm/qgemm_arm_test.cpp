// Exactness test for one ARM integer GEMM micro-kernel (codegen/ukernels/qgemm_*.h).
//
// Built once per variant by run_qgemm_arm_test.sh, with -DTG_QGEMM_VARIANT_NEON,
// -DTG_QGEMM_VARIANT_DOTPROD or -DTG_QGEMM_VARIANT_I8MM and the matching -march
// (every header defines namespace tg_qgemm, so one variant per program). Packs A
// and B as README.md lays them out, calls tg_qgemm::tile() and compares C with a
// naive int64 reference, element by element. Prints one line per failing case and
// a summary; exits non-zero on any mismatch.
#if defined(TG_QGEMM_VARIANT_NEON)
#include "qgemm_neon.h"
#elif defined(TG_QGEMM_VARIANT_DOTPROD)
#include "qgemm_dotprod.h"
#elif defined(TG_QGEMM_VARIANT_I8MM)
#include "qgemm_i8mm.h"
#else
#error "define one of TG_QGEMM_VARIANT_NEON, TG_QGEMM_VARIANT_DOTPROD, TG_QGEMM_VARIANT_I8MM"
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using tg_qgemm::kKU;
using tg_qgemm::kMR;
using tg_qgemm::kNR;

static_assert(!tg_qgemm::kAUnsigned, "this test fills A with int8 values");

// A kMR x K panel A(r, k) and a K x kNR panel B(k, j), unpacked, row-major.
struct Operands {
  int64_t k = 0;
  std::vector<int8_t> a;  // a[r * k + kk]
  std::vector<int8_t> b;  // b[kk * kNR + j]
};

// 64-byte aligned byte buffer (the contract's panel alignment).
class AlignedBytes {
 public:
  explicit AlignedBytes(size_t size)
      : data_(static_cast<int8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64))) {
    if (data_ == nullptr) {
      std::fprintf(stderr, "out of memory allocating %zu bytes\n", size);
      std::exit(2);
    }
  }
  ~AlignedBytes() { std::free(data_); }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  int8_t* data() { return data_; }

 private:
  int8_t* data_;
};

// The README's layouts:
//   A(r, k) at a[((k / kKU) * kMR + r) * kKU + k % kKU]
//   B(k, j) at b[((k / kKU) * kNR + j) * kKU + k % kKU]
void pack(const Operands& op, int8_t* a, int8_t* b) {
  for (int64_t kk = 0; kk < op.k; ++kk) {
    for (int r = 0; r < kMR; ++r) a[((kk / kKU) * kMR + r) * kKU + kk % kKU] = op.a[r * op.k + kk];
    for (int j = 0; j < kNR; ++j) b[((kk / kKU) * kNR + j) * kKU + kk % kKU] = op.b[kk * kNR + j];
  }
}

// Mismatch lines printed so far, over all cases: a broken kernel fails every
// case, and the first few lines say enough.
int g_printed = 0;
constexpr int kMaxPrinted = 12;

// Runs tile() on `op` and compares with the reference. Returns the number of
// wrong elements (0 on success) and prints the first few (3 per case).
// kc_groups > 0: K in blocks of that many groups (the last one shorter), as
// the generated code calls them: tile() on the first, tile_accumulate() on
// the others at their offsets in the same panels.
int check(const std::string& name, const Operands& op, int64_t kc_groups = 0) {
  const int64_t k_groups = op.k / kKU;
  AlignedBytes a(static_cast<size_t>(op.k) * kMR);
  AlignedBytes b(static_cast<size_t>(op.k) * kNR);
  pack(op, a.data(), b.data());

  // c needs no alignment: write at an odd int32 offset, with guard words around
  // the tile that must survive, and garbage in the tile that must be overwritten.
  constexpr int kGuard = 3;
  constexpr int32_t kGuardValue = 0x5a5a5a5a;
  std::vector<int32_t> c_buf(kMR * kNR + 2 * kGuard, kGuardValue);
  int32_t* c = c_buf.data() + kGuard;
  for (int i = 0; i < kMR * kNR; ++i) c[i] = -0x12345678 + i;

  if (kc_groups <= 0) {
    tg_qgemm::tile(k_groups, a.data(), b.data(), c);
  } else {
    for (int64_t g0 = 0; g0 < k_groups; g0 += kc_groups) {
      const int64_t groups = std::min(kc_groups, k_groups - g0);
      const int8_t* a_block = a.data() + g0 * kMR * kKU;
      const int8_t* b_block = b.data() + g0 * kNR * kKU;
      if (g0 == 0) tg_qgemm::tile(groups, a_block, b_block, c);
      else tg_qgemm::tile_accumulate(groups, a_block, b_block, c);
    }
  }

  int wrong = 0;
  for (int g = 0; g < kGuard; ++g) {
    if (c_buf[g] != kGuardValue || c_buf[kGuard + kMR * kNR + g] != kGuardValue) {
      std::printf("FAIL %s %s: tile() wrote outside the %dx%d tile\n", tg_qgemm::kVariant,
                  name.c_str(), kMR, kNR);
      ++wrong;
      break;
    }
  }
  for (int r = 0; r < kMR; ++r) {
    for (int j = 0; j < kNR; ++j) {
      int64_t want = 0;
      for (int64_t kk = 0; kk < op.k; ++kk) {
        want += int64_t{op.a[r * op.k + kk]} * op.b[kk * kNR + j];
      }
      const int32_t got = c[r * kNR + j];
      if (got != want) {
        if (wrong < 3 && g_printed++ < kMaxPrinted) {
          std::printf("FAIL %s %s: C(%d, %d) = %d, want %lld\n", tg_qgemm::kVariant, name.c_str(),
                      r, j, got, static_cast<long long>(want));
        }
        ++wrong;
      }
    }
  }
  return wrong;
}

Operands random_operands(int64_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(-128, 127);
  Operands op;
  op.k = k;
  op.a.resize(kMR * k);
  op.b.resize(k * kNR);
  for (int8_t& v : op.a) v = static_cast<int8_t>(byte(rng));
  for (int8_t& v : op.b) v = static_cast<int8_t>(byte(rng));
  return op;
}

Operands constant_operands(int64_t k, int8_t a_value, int8_t b_value) {
  Operands op;
  op.k = k;
  op.a.assign(kMR * k, a_value);
  op.b.assign(k * kNR, b_value);
  return op;
}

// A(r, k) = 1 where k == r, B(k, j) = k * kNR + j (mod 256): C's entries name
// the B element they came from, so a layout bug shows up as a readable index.
Operands identity_operands(int64_t k) {
  Operands op;
  op.k = k;
  op.a.assign(kMR * k, 0);
  op.b.resize(k * kNR);
  for (int r = 0; r < kMR && r < k; ++r) op.a[r * k + r] = 1;
  for (int64_t i = 0; i < k * kNR; ++i) op.b[i] = static_cast<int8_t>(i % 128);
  return op;
}

}  // namespace

int main() {
  std::mt19937 rng(20240611);
  int cases = 0;
  int failed = 0;
  auto run = [&](const std::string& name, const Operands& op, int64_t kc_groups = 0) {
    ++cases;
    if (check(name, op, kc_groups) != 0) ++failed;
  };

  const int64_t identity_k = (kMR + kKU - 1) / kKU * kKU;
  run("identity k=" + std::to_string(identity_k), identity_operands(identity_k));
  for (int64_t k_groups : {1, 2, 3, 7, 96, 192}) {
    for (int trial = 0; trial < 3; ++trial) {
      run("random k_groups=" + std::to_string(k_groups) + " trial " + std::to_string(trial),
          random_operands(k_groups * kKU, rng));
    }
  }
  // K in kc blocks with a short last block (tile, then tile_accumulate).
  for (int64_t kc : {1, 5, 16}) {
    run("kc blocks of " + std::to_string(kc) + ", k_groups=37", random_operands(37 * kKU, rng), kc);
  }
  // Extremes: every product at its largest magnitude. K = 65536 is the
  // contract's limit: 65536 * 16384 = 2^30 still fits int32.
  for (int64_t k : {int64_t{4096}, int64_t{65536}}) {
    const std::string ks = " K=" + std::to_string(k);
    run("-128*-128" + ks, constant_operands(k, -128, -128));
    run("-128*127" + ks, constant_operands(k, -128, 127));
    run("127*-128" + ks, constant_operands(k, 127, -128));
    run("127*127" + ks, constant_operands(k, 127, 127));
  }

  std::printf("qgemm %s (%dx%d tile, kKU=%d): %d/%d cases exact%s\n", tg_qgemm::kVariant, kMR,
              kNR, kKU, cases - failed, cases, failed == 0 ? "" : "  FAILED");
  return failed == 0 ? 0 : 1;
}
