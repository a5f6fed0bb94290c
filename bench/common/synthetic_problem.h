#ifndef TESSERA_BENCH_COMMON_SYNTHETIC_PROBLEM_H_
#define TESSERA_BENCH_COMMON_SYNTHETIC_PROBLEM_H_

// Synthetic placement problems for the placer's benchmarks: layered DAGs
// like the ones Baechi's evaluation scales on, at sizes no real model
// reaches, and a uniform NVLink cluster for them.

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "placer/core/cluster.h"
#include "placer/core/problem.h"

namespace tessera::bench {

// `n` ops in layers of `width`; each op reads 1-3 outputs of the previous
// layer and (every other op) a weight of 1-16 MiB; op times 50 us - 1 ms;
// activations 0.25-4 MiB. Deterministic in `seed`.
inline placer::Problem LayeredProblem(int64_t n, int devices, uint64_t seed = 1,
                                      int width = 32, bool training = false) {
  using placer::TensorRole;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> secs(50e-6, 1e-3);
  std::uniform_int_distribution<int64_t> act(int64_t{1} << 18,
                                             int64_t{4} << 20);
  std::uniform_int_distribution<int64_t> weight(int64_t{1} << 20,
                                                int64_t{16} << 20);
  std::uniform_int_distribution<int> fan(1, 3);
  placer::ProblemBuilder b(1, std::vector<int>(devices, 0), training);
  const uint32_t input =
      b.AddTensor("input", int64_t{1} << 20, TensorRole::kInput);
  std::vector<uint32_t> prev, cur;
  for (int64_t i = 0; i < n; ++i) {
    if (i % width == 0) {
      prev.swap(cur);
      cur.clear();
    }
    std::vector<uint32_t> ins;
    if (prev.empty()) {
      ins.push_back(input);
    } else {
      const int k = fan(rng);
      for (int j = 0; j < k; ++j) ins.push_back(prev[rng() % prev.size()]);
    }
    if (i % 2 == 0) {
      ins.push_back(b.AddTensor("w" + std::to_string(i), weight(rng),
                                TensorRole::kWeight));
    }
    const bool last_layer = i >= n - width;
    const uint32_t out = b.AddTensor("t" + std::to_string(i), act(rng),
                                     TensorRole::kActivation, last_layer);
    cur.push_back(out);
    const double f[] = {secs(rng)};
    const double bw[] = {2 * f[0]};
    const uint32_t o[] = {out};
    b.AddOp("op" + std::to_string(i), "Synthetic", f, bw, ins, o);
  }
  return std::move(b).Build().value();
}

// `n` identical GPUs of `memory` usable bytes, NVLink between all of them
// (300 GB/s per direction, 2 us).
inline placer::Cluster NvlinkCluster(int n, int64_t memory) {
  placer::Cluster c;
  c.source = "synthetic";
  for (int i = 0; i < n; ++i) {
    placer::ClusterDevice d;
    d.id = "node0/gpu" + std::to_string(i);
    d.node = "node0";
    d.spec.name = "synthetic-gpu";
    d.memory_total = d.memory_usable = memory;
    d.memory_given = true;
    c.devices.push_back(d);
  }
  c.links.resize(static_cast<size_t>(n) * n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      c.links[static_cast<size_t>(a) * n + b] =
          a == b ? placer::Link{std::numeric_limits<double>::infinity(), 0.0,
                                placer::LinkKind::kLocal}
                 : placer::Link{300e9, 2e-6, placer::LinkKind::kNvlink};
    }
  }
  return c;
}

// Every tensor's bytes: memory = 2 x this / devices leaves the budgets
// active without making the benchmarks' problems infeasible.
inline int64_t TotalBytes(const placer::Problem& p) {
  int64_t total = 0;
  for (const placer::ProblemTensor& t : p.tensors) total += t.bytes;
  return total;
}

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_COMMON_SYNTHETIC_PROBLEM_H_
