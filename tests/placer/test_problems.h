#ifndef TESSERA_TESTS_PLACER_TEST_PROBLEMS_H_
#define TESSERA_TESTS_PLACER_TEST_PROBLEMS_H_

// Problems and clusters built by hand for the placer's tests: uniform
// clusters without YAML, and seeded random DAGs.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "placer/core/cluster.h"
#include "placer/core/problem.h"

namespace tessera::placer::testing {

// The MIP time limit of a test that asserts a proof (optimal, or the ILP's
// plan chosen): a cap, not a budget. CBC's limit is wall time, so shorter
// ones failed such tests on a loaded machine (ASan beside issue 34's stress
// run, load ~8 on 2 cores: at 8 s, 5 of 20 seeds were left unproven); idle,
// each of these solves takes well under a second.
inline constexpr double kProofLimitS = 120.0;

// `n` devices on one node, every pair linked with `bandwidth` and `latency`;
// memory_usable = `memory` each, shares given (default 1). Each device gets
// its own profile column when `profiles_per_device`, else all share one.
inline Cluster UniformCluster(int n, int64_t memory, double bandwidth = 1e9,
                              double latency = 0.0,
                              std::vector<double> shares = {}) {
  Cluster c;
  c.source = "test";
  for (int i = 0; i < n; ++i) {
    ClusterDevice d;
    d.id = "node0/gpu" + std::to_string(i);
    d.node = "node0";
    d.spec.name = "test-gpu";
    d.spec.memory_bytes = memory;
    d.memory_total = memory;
    d.memory_usable = memory;
    d.memory_given = true;
    d.compute_share = shares.empty() ? 1.0 : shares[i];
    c.devices.push_back(d);
  }
  c.links.resize(static_cast<size_t>(n) * n);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      Link& l = c.links[static_cast<size_t>(a) * n + b];
      if (a == b) {
        l = Link{std::numeric_limits<double>::infinity(), 0.0,
                 LinkKind::kLocal};
      } else {
        l = Link{bandwidth, latency, LinkKind::kCustom};
      }
    }
  }
  return c;
}

struct RandomDagOptions {
  int ops = 30;
  int devices = 3;
  int profiles = 1;  // device d uses profile d % profiles
  bool training = false;
  double edge_probability = 0.15;  // to each later op within `window`
  int window = 8;
  int64_t max_tensor_bytes = 1000;
  int64_t max_weight_bytes = 1000;
  double max_seconds = 1.0;
};

// A random DAG: op i reads the output of earlier ops within `window`, some
// ops read a weight (some weights shared by two ops), the first op reads a
// graph input, sinks' outputs are graph outputs. Deterministic in `seed`.
inline Problem RandomProblem(uint64_t seed, const RandomDagOptions& o) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> secs(0.01 * o.max_seconds,
                                              o.max_seconds);
  std::uniform_int_distribution<int64_t> tbytes(1, o.max_tensor_bytes);
  std::uniform_int_distribution<int64_t> wbytes(1, o.max_weight_bytes);
  std::bernoulli_distribution edge(o.edge_probability), has_weight(0.5);
  std::vector<int> profile(o.devices);
  for (int d = 0; d < o.devices; ++d) profile[d] = d % o.profiles;
  ProblemBuilder b(o.profiles, profile, o.training);
  const uint32_t input = b.AddTensor("input", tbytes(rng), TensorRole::kInput);
  std::vector<uint32_t> outs;
  std::vector<bool> consumed;
  uint32_t shared_weight = UINT32_MAX;
  for (int i = 0; i < o.ops; ++i) {
    std::vector<uint32_t> ins;
    if (i == 0) ins.push_back(input);
    for (int j = std::max(0, i - o.window); j < i; ++j) {
      if (edge(rng) || (j == i - 1 && ins.empty())) {
        ins.push_back(outs[j]);
        consumed[j] = true;
      }
    }
    if (has_weight(rng)) {
      if (shared_weight != UINT32_MAX && has_weight(rng)) {
        ins.push_back(shared_weight);
        shared_weight = UINT32_MAX;
      } else {
        const uint32_t w = b.AddTensor("w" + std::to_string(i), wbytes(rng),
                                       TensorRole::kWeight);
        ins.push_back(w);
        shared_weight = w;
      }
    }
    const uint32_t out = b.AddTensor("t" + std::to_string(i), tbytes(rng),
                                     TensorRole::kActivation);
    outs.push_back(out);
    consumed.push_back(false);
    std::vector<double> f(o.profiles), bw(o.training ? o.profiles : 0);
    for (double& x : f) x = secs(rng);
    for (double& x : bw) x = 2 * secs(rng);
    const uint32_t o1[] = {out};
    b.AddOp("op" + std::to_string(i), "Op", f, bw, ins, o1, tbytes(rng) / 4);
  }
  (void)consumed;
  auto p = std::move(b).Build();
  Problem problem = std::move(p).value();
  // Sinks' outputs are graph outputs.
  for (uint32_t t = 0; t < problem.num_tensors(); ++t) {
    if (problem.tensors[t].role == TensorRole::kActivation &&
        problem.consumers(t).empty()) {
      problem.tensors[t].output = true;
    }
  }
  return problem;
}

}  // namespace tessera::placer::testing

#endif  // TESSERA_TESTS_PLACER_TEST_PROBLEMS_H_
