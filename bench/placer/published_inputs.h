#ifndef TESSERA_BENCH_PLACER_PUBLISHED_INPUTS_H_
#define TESSERA_BENCH_PLACER_PUBLISHED_INPUTS_H_

// The published inputs of Tarnawski et al. (data/dnn-partitioning) one
// benchmark reads: `set` is "throughput-inputs" or "latency-inputs"; the
// layer graphs first, then the operator graphs, each sorted by name.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/testlib/repo_paths.h"

namespace tessera::bench {

inline std::string PublishedRoot() {
  return std::string(TESSERA_SOURCE_DIR) + "/data/dnn-partitioning/";
}

inline std::vector<std::string> PublishedInputs(const std::string& set) {
  std::vector<std::string> files;
  for (const char* graphs : {"/LayerGraphs", "/OperatorGraphs"}) {
    std::vector<std::string> here;
    for (const auto& e :
         std::filesystem::directory_iterator(PublishedRoot() + set + graphs)) {
      here.push_back(e.path().string());
    }
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  return files;
}

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_PLACER_PUBLISHED_INPUTS_H_
