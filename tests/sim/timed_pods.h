#ifndef TESSERA_TESTS_SIM_TIMED_PODS_H_
#define TESSERA_TESTS_SIM_TIMED_PODS_H_

// Hand-made trace pods for the timed replays' tests.

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/trace.h"

namespace tessera::scheduler {

// The simulators under test (sim/).
using sim::TracePod;

namespace {  // each test file numbers its own pods (pod-0, pod-1, ...)

// A pod that arrives at `arrival`, is scheduled at once in the trace and
// runs `duration` seconds on `gpus` whole GPUs (or `milli` of one GPU when
// gpus is 1 and milli < 1000).
TracePod Pod(double arrival, double duration, int gpus, int milli = 1000,
             std::string qos = "LS") {
  static int n = 0;
  TracePod p;
  p.name = "pod-" + std::to_string(n++);
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  p.num_gpu = gpus;
  p.gpu_milli = gpus > 0 ? milli : 0;
  p.qos = std::move(qos);
  p.creation_time = arrival;
  p.scheduled_time = arrival;
  p.deletion_time = arrival + duration;
  return p;
}

// `n` random pods (seeded): CPU-only, fractions, one whole GPU or gangs
// of up to four, arriving within 500 s, each of the three QoS classes.
[[maybe_unused]] std::vector<TracePod> RandomTrace(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<TracePod> pods;
  const std::vector<std::string> qos = {"LS", "BE", "Burstable"};
  for (int i = 0; i < n; ++i) {
    const int kind = static_cast<int>(rng() % 4);
    const int gpus = kind == 0   ? 0
                     : kind == 3 ? 1 + static_cast<int>(rng() % 4)
                                 : 1;
    const int milli = kind == 1 ? 100 + static_cast<int>(rng() % 900) : 1000;
    pods.push_back(Pod(static_cast<double>(rng() % 500),
                       static_cast<double>(1 + rng() % 200), gpus, milli,
                       qos[rng() % 3]));
  }
  return pods;
}

}  // namespace
}  // namespace tessera::scheduler

#endif  // TESSERA_TESTS_SIM_TIMED_PODS_H_
