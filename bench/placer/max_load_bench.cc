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
    } else if (std::strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc) {
      options.time_limit_s = std::atof(argv[++i]);
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
  std::printf("%-40s %5s %2s %5s %8s %11s %10s %10s %3s %8s %8s\n", "input",
              "nodes", "k", "units", "ideals", "blocks", "seed", "max load",
              "opt", "seconds", "peak MiB");
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
      std::printf("%-40s %5zu %2d  %s\n", name.c_str(), problem->nodes.size(),
                  problem->kinds[0].count, dp.error().message.c_str());
      continue;
    }
    std::printf(
        "%-40s %5zu %2d %5lld %8lld %11lld %10.4f %10.4f %3s %8.3f %8.1f\n",
        name.c_str(), problem->nodes.size(), problem->kinds[0].count,
        static_cast<long long>(dp->units), static_cast<long long>(dp->ideals),
        static_cast<long long>(dp->blocks), dp->seed_max_load, dp->max_load,
        dp->optimal ? "yes" : "no", dp->seconds, PeakMiB());
    if (!dp->optimal) std::printf("    stopped: %s\n", dp->stopped.c_str());
    std::fflush(stdout);
  }
  return 0;
}
