#ifndef TESSERA_BENCH_COMMON_SYNTHETIC_GRAPH_H_
#define TESSERA_BENCH_COMMON_SYNTHETIC_GRAPH_H_

// Synthetic graphs for benchmarks at sizes no real model reaches.

#include <memory>
#include <string>

#include "graph/builder.h"

namespace tessera::bench {

// A chain of n nodes alternating Relu and Add, with a residual edge into
// every Add; every tensor is [8, 1024] float32.
inline std::unique_ptr<graph::OpGraph> BuildResidualChain(int64_t n) {
  using graph::DataType;
  using graph::TensorId;
  using graph::TensorKind;
  graph::OpGraphBuilder b("synthetic");
  const int64_t dims[] = {8, 1024};
  TensorId prev =
      b.AddTensor("x", DataType::kFloat32, dims, TensorKind::kInput);
  b.MarkInput(prev);
  TensorId skip = prev;
  for (int64_t i = 0; i < n; ++i) {
    const TensorId out =
        b.AddTensor("t" + std::to_string(i), DataType::kFloat32, dims,
                    TensorKind::kActivation);
    const TensorId o[] = {out};
    if (i % 2 == 0) {
      const TensorId in[] = {prev};
      b.AddNode("relu" + std::to_string(i), "Relu", "", in, o);
    } else {
      const TensorId in[] = {prev, skip};
      b.AddNode("add" + std::to_string(i), "Add", "", in, o);
      skip = out;
    }
    prev = out;
  }
  b.MarkOutput(prev);
  return std::move(b).Build().value();
}

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_COMMON_SYNTHETIC_GRAPH_H_
