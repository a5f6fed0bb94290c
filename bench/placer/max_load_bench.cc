// The exact contiguous max-load DP on the published throughput inputs
// (data/dnn-partitioning/throughput-inputs; docs/placer_max_load.md):
// per input, the ideals explored, the time, the optimum, and the
// human-expert split's max load under the same model where one exists.
//   build/bench/placer/max_load_bench [--max-states N] [FILE.json ...]
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "placer/max_load.h"

namespace {

namespace fs = std::filesystem;
using tessera::placer::MaxLoadDpOptions;

nlohmann::json Read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

double PeakMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  MaxLoadDpOptions options;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-states") == 0 && i + 1 < argc) {
      options.max_states = std::atoll(argv[++i]);
    } else {
      files.emplace_back(argv[i]);
    }
  }
  const std::string root =
      std::string(TESSERA_SOURCE_DIR) + "/data/dnn-partitioning/";
  if (files.empty()) {
    for (const char* dir : {"throughput-inputs/LayerGraphs",
                            "throughput-inputs/OperatorGraphs"}) {
      std::vector<std::string> here;
      for (const auto& e : fs::directory_iterator(root + dir)) {
        here.push_back(e.path().string());
      }
      std::sort(here.begin(), here.end());
      files.insert(files.end(), here.begin(), here.end());
    }
  }
  std::printf("%-58s %6s %3s %10s %12s %9s %9s\n", "input", "nodes", "k",
              "ideals", "max load", "seconds", "peak MiB");
  for (const std::string& f : files) {
    auto problem = tessera::placer::ParseTarnawski(Read(f), f);
    if (!problem) {
      std::printf("%s: %s\n", f.c_str(), problem.error().message.c_str());
      continue;
    }
    auto dp = tessera::placer::SolveContiguousMaxLoad(*problem, options);
    const std::string name = fs::path(f).parent_path().filename().string() +
                             "/" + fs::path(f).filename().string();
    if (!dp) {
      std::printf("%-58s %6zu %3d  %s\n", name.c_str(), problem->nodes.size(),
                  problem->accelerators, dp.error().message.c_str());
      continue;
    }
    std::printf("%-58s %6zu %3d %10lld %12.4f %9.3f %9.1f\n", name.c_str(),
                problem->nodes.size(), problem->accelerators,
                static_cast<long long>(dp->ideals), dp->max_load, dp->seconds,
                PeakMiB());
    std::fflush(stdout);
  }
  return 0;
}
