// The placer's scaling curve: median time and peak memory of each
// algorithm on layered DAGs from 10^3 to 10^6 ops, on 4 and 8 GPUs. Each
// case runs in a child process so its peak RSS is its own.
//   placer_scaling [--min-ops N] [--max-ops N] [--repeat R]
//                  [--algos m-topo,m-etf,...]
// Prints a Markdown table: ops, devices, algorithm, median ms, ms per
// (op x device) x 10^6, page faults per run (the median, with those of any
// child the algorithm forks), problem RSS MiB, peak RSS MiB; then what a
// page fault costs on this machine, which the times of the algorithms that
// fill large tables depend on (docs/placer_baechi.md).
#include <sys/mman.h>
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
  double median_faults = 0;
  double problem_rss_mib = 0;
  int ok = 0;
};

double RssMib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// Minor page faults so far of this process and its reaped children.
double Faults() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return static_cast<double>(self.ru_minflt + children.ru_minflt);
}

template <typename T>
T Median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per fresh 4 KiB page touched (64 MiB, the median of three).
double PageFaultMicros() {
  constexpr size_t kBytes = size_t{64} << 20, kPage = 4096;
  std::vector<double> us;
  for (int r = 0; r < 3; ++r) {
    void* m = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 0.0;
    auto* bytes = static_cast<volatile char*>(m);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < kBytes; i += kPage) bytes[i] = 1;
    const auto t1 = std::chrono::steady_clock::now();
    munmap(m, kBytes);
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                 static_cast<double>(kBytes / kPage));
  }
  return Median(us);
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
  std::vector<double> ms, faults;
  for (int r = 0; r < repeat; ++r) {
    const double f0 = Faults();
    const auto t0 = std::chrono::steady_clock::now();
    auto out = Run(a, p, c, b);
    const auto t1 = std::chrono::steady_clock::now();
    faults.push_back(Faults() - f0);
    if (!out) {
      std::fprintf(stderr, "%s n=%lld d=%d: %s\n",
                   std::string(AlgorithmName(a)).c_str(),
                   static_cast<long long>(n), d, out.error().message.c_str());
      break;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (!ms.empty()) {
    row.median_ms = Median(ms);
    row.median_faults = Median(faults);
    row.ok = 1;
  }
  if (write(fd, &row, sizeof row) != sizeof row) _exit(1);
  _exit(0);
}

}  // namespace
}  // namespace tessera::placer

int main(int argc, char** argv) {
  using namespace tessera::placer;
  int64_t min_ops = 1000, max_ops = 1000000;
  int repeat = 3;
  std::vector<Algorithm> algos = {Algorithm::kMTopo, Algorithm::kMEtf,
                                  Algorithm::kMSct, Algorithm::kPipeline};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--min-ops") && i + 1 < argc) {
      min_ops = std::max<int64_t>(1, std::atoll(argv[++i]));
    } else if (!std::strcmp(argv[i], "--max-ops") && i + 1 < argc) {
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
      const bool help = !std::strcmp(argv[i], "--help");
      std::fprintf(help ? stdout : stderr,
                   "usage: placer_scaling [--min-ops N] [--max-ops N] "
                   "[--repeat R] [--algos m-topo,m-etf,m-sct,pipeline]\n"
                   "  sizes go by 10x from --min-ops (1000) to --max-ops "
                   "(1000000), on 4 and 8 GPUs;\n"
                   "  each case is the median of --repeat (3) runs.\n"
                   "example: placer_scaling --min-ops 1000000 --repeat 5 "
                   "--algos m-topo,m-etf,m-sct\n");
      return help ? 0 : 2;
    }
  }
  std::printf(
      "| ops | devices | algorithm | median ms | ns per op x device | "
      "page faults per run | problem RSS MiB | peak RSS MiB "
      "|\n|---:|---:|---|---:|---:|---:|---:|---:|\n");
  for (Algorithm a : algos) {
    for (int64_t n = min_ops; n <= max_ops; n *= 10) {
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
          std::printf("| %lld | %d | %s | failed | | | | |\n",
                      static_cast<long long>(n), d,
                      std::string(AlgorithmName(a)).c_str());
          continue;
        }
        std::printf("| %lld | %d | %s | %.2f | %.1f | %.0f | %.0f | %.0f |\n",
                    static_cast<long long>(n), d,
                    std::string(AlgorithmName(a)).c_str(), row.median_ms,
                    row.median_ms * 1e6 / static_cast<double>(n * d),
                    row.median_faults, row.problem_rss_mib,
                    static_cast<double>(usage.ru_maxrss) / 1024.0);
        std::fflush(stdout);
      }
    }
  }
  std::printf(
      "\npage fault on this machine: %.2f us per fresh 4 KiB page "
      "(64 MiB touched, median of 3)\n",
      PageFaultMicros());
  return 0;
}
