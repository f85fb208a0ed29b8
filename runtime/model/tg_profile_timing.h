// The timing of the top-k profiling harness (codegen/project/emit_profile_project.h):
// tg_time(run) is the median seconds of one call of a variant. profile.h
// includes it after the kernel prelude; with TG_PROFILE_ON_DEVICE defined (a
// GPU harness, the device shim included first) a call is a launch, timed with
// device events on the default stream; otherwise a CPU call, timed with
// steady_clock.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>
// Median seconds of one call of `run`, sampled 7 times after a warm-up; each
// sample repeats the call to last about half a millisecond. `elapsed(reps)`
// times reps calls.
template <typename Elapsed> inline double tg_median_seconds(Elapsed elapsed) {
  const double once = elapsed(1);
  if (once < 0) return once;
  const int reps = std::max(1, std::min(1000, static_cast<int>(5e-4 / std::max(once, 1e-9))));
  std::vector<double> samples;
  for (int s = 0; s < 7; ++s) samples.push_back(elapsed(reps) / reps);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

#ifdef TG_PROFILE_ON_DEVICE
template <typename Launch> inline double tg_time(Launch launch) {
  if (launch() != tg_device_success || tg_device_stream_synchronize(nullptr) != tg_device_success) return -1;  // warm-up
  tg_device_event start = nullptr, stop = nullptr;
  if (tg_device_event_create(&start) != tg_device_success || tg_device_event_create(&stop) != tg_device_success)
    return -1;
  const double seconds = tg_median_seconds([&](int reps) {
    if (tg_device_event_record(start, nullptr) != tg_device_success) return -1.0;
    for (int r = 0; r < reps; ++r)
      if (launch() != tg_device_success) return -1.0;
    float ms = 0;
    if (tg_device_event_record(stop, nullptr) != tg_device_success ||
        tg_device_event_synchronize(stop) != tg_device_success ||
        tg_device_event_elapsed_ms(&ms, start, stop) != tg_device_success)
      return -1.0;
    return ms * 1e-3;
  });
  const bool released = tg_device_event_destroy(start) == tg_device_success &&
                        tg_device_event_destroy(stop) == tg_device_success;
  return released && tg_device_last_error() == tg_device_success ? seconds : -1;
}
#else
template <typename Run> inline double tg_time(Run run) {
  run();  // warm-up
  return tg_median_seconds([&](int reps) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) run();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}
#endif
