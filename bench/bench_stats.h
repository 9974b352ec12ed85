// Summaries of latency samples for the daemon benchmarks: percentiles by the
// nearest-rank method over every recorded sample (no histogram buckets, no
// interpolation), so a reported p99 is a latency that was actually observed.
//
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

namespace gpulet::bench {

struct Summary {
  size_t n = 0;
  double p50 = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
};

// The summary of `samples` (any unit); all zero when there are none.
Summary Summarize(std::vector<double> samples);

// The p-th percentile (0 < p <= 100) of sorted samples, nearest rank.
double Percentile(const std::vector<double>& sorted, double p);

using BenchClock = std::chrono::steady_clock;

inline double MicrosSince(BenchClock::time_point start) {
  return std::chrono::duration<double, std::micro>(BenchClock::now() - start)
      .count();
}

}  // namespace gpulet::bench
