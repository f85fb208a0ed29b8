// box_traffic_bytes (cost_model.h): the distinct transaction-aligned
// segments a box of a row-major tensor touches, counted by arithmetic.
//
// The clipped box is a set of equally long contiguous runs: the innermost
// dims the box covers completely merge with the next dim (the "run dim" k)
// into one run per position of the outer dims 0..k-1. Run starts are
//   start = base + sum_{d<k} t_d * S_d,   t_d in [0, count_d)
// (S_d the byte stride of dim d), so whether a run straddles a transaction
// boundary depends only on start mod T. The runs' residues are counted in a
// histogram mod T, built dim by dim as a cyclic convolution of each dim's
// residues {t * S_d mod T}; a dim's residues repeat with period
// T / gcd(S_d, T), so no run is ever visited.
//
// Distinct segments = sum over runs of the segments each touches, minus one
// for every pair of consecutive runs that share a segment (runs are disjoint
// and ascending, so only consecutive runs can share one). Consecutive runs
// differ in the outer dim j that advances while dims j+1..k-1 wrap around;
// their distance depends on j only, and whether they share a segment again
// only on the earlier run's residue, counted the same way.
#include <numeric>

#include "compiler/ir/error.h"
#include "scheduler/cost_model.h"

namespace tilegraph::scheduler {

namespace {

// How many runs start at each residue; residues are multiples of `unit`
// (which divides `modulus`), stored at index residue / unit.
struct ResidueCounts {
  int64_t modulus = 1;
  int64_t unit = 1;
  std::vector<int64_t> count;

  ResidueCounts(int64_t modulus_, int64_t unit_)
      : modulus(modulus_), unit(unit_), count(static_cast<size_t>(modulus_ / unit_), 0) {}
  size_t slots() const { return count.size(); }
};

// Residues of t * stride for t in [0, n), each cycle of the period counted
// n / period times (plus once more for the first n % period).
ResidueCounts steps(int64_t stride, int64_t n, int64_t modulus, int64_t unit) {
  ResidueCounts h(modulus, unit);
  const int64_t m = static_cast<int64_t>(h.slots());
  const int64_t step = (stride % modulus) / unit;
  const int64_t period = m / std::gcd(step, m);
  const int64_t full = n / period, rest = n % period;
  int64_t r = 0;
  for (int64_t t = 0; t < std::min(n, period); ++t) {
    h.count[static_cast<size_t>(r)] += full + (t < rest ? 1 : 0);
    r = (r + step) % m;
  }
  return h;
}

// Residues of a + b for independent a, b.
ResidueCounts convolve(const ResidueCounts& a, const ResidueCounts& b) {
  ResidueCounts c(a.modulus, a.unit);
  const size_t m = a.slots();
  for (size_t i = 0; i < m; ++i) {
    if (a.count[i] == 0) continue;
    for (size_t j = 0; j < m; ++j)
      if (b.count[j] != 0) c.count[(i + j) % m] += a.count[i] * b.count[j];
  }
  return c;
}

}  // namespace

int64_t box_traffic_bytes(const std::vector<int64_t>& shape, int element_bytes,
                          const std::vector<int64_t>& lo, const std::vector<int64_t>& extent,
                          int transaction_bytes) {
  TG_CHECK(lo.size() == shape.size() && extent.size() == shape.size(), "box rank ", lo.size(),
           "/", extent.size(), " vs tensor rank ", shape.size());
  TG_CHECK(element_bytes >= 1 && transaction_bytes >= 1, "element bytes ", element_bytes,
           " transaction bytes ", transaction_bytes);
  const int64_t T = transaction_bytes;
  const int rank = static_cast<int>(shape.size());
  // A scalar is one run of one element.
  if (rank == 0) return ((element_bytes + T - 1) / T) * T;

  // Clip the box to the tensor.
  std::vector<int64_t> first(rank), count(rank), stride(rank);
  for (int d = 0; d < rank; ++d) {
    int64_t a = std::max<int64_t>(lo[d], 0);
    int64_t b = std::min(lo[d] + extent[d], shape[d]);
    if (b <= a) return 0;
    first[d] = a;
    count[d] = b - a;
  }
  int64_t s = element_bytes;
  for (int d = rank - 1; d >= 0; --d) {
    stride[d] = s;
    s *= shape[d];
  }

  // The run dim: innermost dim the box does not cover (0 for the whole tensor).
  int k = rank - 1;
  while (k > 0 && count[k] == shape[k]) --k;
  const int64_t run_bytes = count[k] * stride[k];
  int64_t base = 0;
  for (int d = 0; d <= k; ++d) base += first[d] * stride[d];

  // Every run start is base plus multiples of the outer strides: a multiple
  // of `unit`, which keeps the histograms small.
  int64_t unit = std::gcd(T, base);
  for (int d = 0; d < k; ++d) unit = std::gcd(unit, stride[d]);

  // wrap[j]: bytes from the first to the last run of the sub-box of dims j+1..k-1.
  std::vector<int64_t> wrap(k + 1, 0);
  for (int j = k - 2; j >= 0; --j) wrap[j] = wrap[j + 1] + (count[j + 1] - 1) * stride[j + 1];

  ResidueCounts starts(T, unit);
  starts.count[static_cast<size_t>((base % T) / unit)] = 1;
  int64_t shared_pairs = 0;
  for (int j = 0; j < k; ++j) {
    // Pairs where dim j advances: the earlier run starts wrap[j] after its
    // sub-box start y, the later one at y + stride[j].
    const int64_t gap = stride[j] - wrap[j] - run_bytes;
    if (count[j] > 1 && gap < T) {
      ResidueCounts earlier = convolve(starts, steps(stride[j], count[j] - 1, T, unit));
      for (size_t r = 0; r < earlier.slots(); ++r) {
        int64_t y = static_cast<int64_t>(r) * unit;
        if ((y + wrap[j] + run_bytes - 1) / T == (y + stride[j]) / T) shared_pairs += earlier.count[r];
      }
    }
    starts = convolve(starts, steps(stride[j], count[j], T, unit));
  }

  int64_t segments = 0;
  for (size_t r = 0; r < starts.slots(); ++r) {
    int64_t rho = static_cast<int64_t>(r) * unit;
    segments += starts.count[r] * ((rho + run_bytes - 1) / T + 1);
  }
  return (segments - shared_pairs) * T;
}

}  // namespace tilegraph::scheduler
