// random_fill.cpp — see random_fill.h.
#include "random_fill.h"

#include "npy.h"
#include "tilegraph_model.h"

#include <cstring>
#include <stdexcept>

namespace tilegraph::rt {
namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

template <typename T>
void store(uint8_t* dst, size_t i, T v) {
  std::memcpy(dst + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

void fill_random(int dtype, size_t count, uint64_t seed, uint64_t stream, uint8_t* dst) {
  if (dtype_size(dtype) == 0) throw std::invalid_argument("cannot generate random " + dtype_name(dtype));
  // Two odd multipliers keep (seed, stream) pairs from colliding in practice.
  SplitMix64 rng{seed * 0xD1B54A32D192ED03ull + stream * 0x8CB92BA72F3D8DD7ull};
  for (size_t i = 0; i < count; ++i) {
    uint64_t r = rng.next();
    // Floats take exactly as many random bits as their mantissa holds, so
    // 2u - 1 is exact and never rounds up to 1.0.
    switch (dtype) {
      case TG_F32: store(dst, i, float(double(r >> 40) * 0x1p-23 - 1.0)); break;
      case TG_F64: store(dst, i, double(r >> 11) * 0x1p-52 - 1.0); break;
      case TG_F16: store(dst, i, float_to_half(float(double(r >> 53) * 0x1p-10 - 1.0))); break;
      case TG_BOOL:
      case TG_I8:
      case TG_U8: store(dst, i, uint8_t(r & 1)); break;
      case TG_I16:
      case TG_U16: store(dst, i, uint16_t(r & 1)); break;
      case TG_I32:
      case TG_U32: store(dst, i, uint32_t(r & 1)); break;
      default: store(dst, i, uint64_t(r & 1)); break;  // TG_I64, TG_U64
    }
  }
}

}  // namespace tilegraph::rt
