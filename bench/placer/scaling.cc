// The placer's scaling curve: median time and peak memory of each
// algorithm on layered DAGs from 10^3 to 10^6 ops, on 4 and 8 GPUs. Each
// case runs in a child process so its peak RSS is its own.
//   placer_scaling [--max-ops N] [--repeat R] [--algos m-topo,m-etf,...]
// Prints a Markdown table: ops, devices, algorithm, median ms, ms per
// (op x device) x 10^6, problem RSS MiB, peak RSS MiB.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/common/synthetic_problem.h"
#include "placer/core/algorithms_internal.h"

namespace tessera::placer {
namespace {

struct Row {
  double median_ms = 0;
  double problem_rss_mib = 0;
  int ok = 0;
};

double RssMib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

Result<AlgoOutput> Run(Algorithm a, const Problem& p, const Cluster& c,
                       const Budget& b) {
  const PlaceOptions o;
  switch (a) {
    case Algorithm::kMTopo:
      return PlaceMTopo(p, c, b, o);
    case Algorithm::kMEtf:
      return PlaceMEtf(p, c, b, o);
    case Algorithm::kMSct:
      return PlaceMSct(p, c, b, o);
    case Algorithm::kPipeline:
      return PlacePipeline(p, c, b, o);
    default:
      return PlaceSingle(p, c, b, o);
  }
}

// In the child: builds the problem, runs `repeat` times, writes a Row to
// `fd`.
void Child(Algorithm a, int64_t n, int d, int repeat, int fd) {
  Row row;
  const Problem p = bench::LayeredProblem(n, d);
  const Cluster c = bench::NvlinkCluster(d, 2 * bench::TotalBytes(p) / d);
  Budget b;
  for (const ClusterDevice& dev : c.devices) b.push_back(dev.memory_usable);
  row.problem_rss_mib = RssMib();
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = Run(a, p, c, b);
    const auto t1 = std::chrono::steady_clock::now();
    if (!out) {
      std::fprintf(stderr, "%s n=%lld d=%d: %s\n",
                   std::string(AlgorithmName(a)).c_str(),
                   static_cast<long long>(n), d, out.error().message.c_str());
      break;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (!ms.empty()) {
    std::sort(ms.begin(), ms.end());
    row.median_ms = ms[ms.size() / 2];
    row.ok = 1;
  }
  if (write(fd, &row, sizeof row) != sizeof row) _exit(1);
  _exit(0);
}

}  // namespace
}  // namespace tessera::placer

int main(int argc, char** argv) {
  using namespace tessera::placer;
  int64_t max_ops = 1000000;
  int repeat = 3;
  std::vector<Algorithm> algos = {Algorithm::kMTopo, Algorithm::kMEtf,
                                  Algorithm::kMSct, Algorithm::kPipeline};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--max-ops") && i + 1 < argc) {
      max_ops = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--algos") && i + 1 < argc) {
      algos.clear();
      std::string list = argv[++i];
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        auto a = ParseAlgorithm(list.substr(start, comma - start));
        if (!a) {
          std::fprintf(stderr, "%s\n", a.error().message.c_str());
          return 2;
        }
        algos.push_back(*a);
        start = comma + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: placer_scaling [--max-ops N] [--repeat R] "
                   "[--algos m-topo,m-etf,m-sct,pipeline]\n");
      return 2;
    }
  }
  std::printf(
      "| ops | devices | algorithm | median ms | ns per op x device | "
      "problem RSS MiB | peak RSS MiB "
      "|\n|---:|---:|---|---:|---:|---:|---:|\n");
  for (Algorithm a : algos) {
    for (int64_t n = 1000; n <= max_ops; n *= 10) {
      for (int d : {4, 8}) {
        int fds[2];
        if (pipe(fds) != 0) return 1;
        const pid_t pid = fork();
        if (pid == 0) {
          close(fds[0]);
          Child(a, n, d, repeat, fds[1]);
        }
        close(fds[1]);
        Row row;
        const bool got = read(fds[0], &row, sizeof row) == sizeof row;
        close(fds[0]);
        int status = 0;
        rusage usage{};
        wait4(pid, &status, 0, &usage);
        if (!got || !row.ok) {
          std::printf("| %lld | %d | %s | failed | | | |\n",
                      static_cast<long long>(n), d,
                      std::string(AlgorithmName(a)).c_str());
          continue;
        }
        std::printf(
            "| %lld | %d | %s | %.2f | %.1f | %.0f | %.0f |\n",
            static_cast<long long>(n), d, std::string(AlgorithmName(a)).c_str(),
            row.median_ms, row.median_ms * 1e6 / static_cast<double>(n * d),
            row.problem_rss_mib, static_cast<double>(usage.ru_maxrss) / 1024.0);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
