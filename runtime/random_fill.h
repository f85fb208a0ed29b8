// random_fill.h — the deterministic random inputs of main_test.
//
// Values: floats uniform in [-1, 1), integers (signed or not) in {0, 1} —
// valid as indices, token ids and masks of any model — and bools random.
// The stream is splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom
// number generators", OOPSLA 2014), whose output is specified exactly, unlike
// std:: distributions, so a seed gives the same bytes with every compiler and
// standard library. Each input gets its own stream from (seed, stream), so
// the values of one input do not depend on which others came from files.
#ifndef TILEGRAPH_RT_RANDOM_FILL_H
#define TILEGRAPH_RT_RANDOM_FILL_H

#include <cstddef>
#include <cstdint>

namespace tilegraph::rt {

// Writes `count` elements of `dtype` (a tg_dtype) to dst. Throws
// std::invalid_argument for a dtype npy.h does not know.
void fill_random(int dtype, size_t count, uint64_t seed, uint64_t stream, uint8_t* dst);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_RANDOM_FILL_H
