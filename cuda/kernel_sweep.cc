#include "cuda/kernel_sweep.h"

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::cuda {
namespace {

// Times three small eager ops (add, mul, relu on 64 floats) in a loop on
// the GPU: their GPU work is trivial, so the loop runs at the host's
// dispatch rate. Median of 5 trials of argv[2] iterations. No single
// quotes: the shell passes it in them.
constexpr const char* kEagerSnippet = R"(
import sys, time
try:
    import torch
except Exception as e:
    print("no_torch", type(e).__name__)
    sys.exit(0)
if not torch.cuda.is_available():
    print("no_cuda")
    sys.exit(0)
gpu, n = int(sys.argv[1]), int(sys.argv[2])
torch.cuda.set_device(gpu)
x = torch.ones(64, device="cuda")
y = torch.ones(64, device="cuda")
def step(x):
    return torch.relu(torch.mul(torch.add(x, y), 0.5))
for _ in range(200):
    x = step(x)
torch.cuda.synchronize()
trials = []
for _ in range(5):
    t = time.perf_counter()
    for _ in range(n):
        x = step(x)
    torch.cuda.synchronize()
    trials.append((time.perf_counter() - t) / (3 * n))
print("eager_op_s", repr(sorted(trials)[2]))
)";

std::string LastLine(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::string last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last;
}

}  // namespace

Status FitKernelSweep(double kernel_s, KernelSweep* sweep) {
  if (!(sweep->peak_flops > 0)) {
    return BadInput(sweep->kind + " " + sweep->dtype +
                    ": no peak to relate the efficiency to");
  }
  std::vector<estimator::EfficiencySample> points;
  sweep->dropped = 0;
  for (const KernelSample& s : sweep->samples) {
    if (!(s.seconds > kernel_s * kKernelTimeMargin) || !(s.flops > 0)) {
      ++sweep->dropped;
      continue;
    }
    points.push_back(
        {s.flops, s.flops / ((s.seconds - kernel_s) * sweep->peak_flops)});
  }
  Result<estimator::EfficiencyFit> fit = estimator::FitEfficiencyCurve(points);
  if (!fit) {
    return BadInput(sweep->kind + " " + sweep->dtype + ": " +
                    fit.error().message);
  }
  sweep->fit = *fit;
  return {};
}

Result<double> ParseEagerOutput(const std::string& output) {
  const std::string last = LastLine(output);
  if (last.rfind("no_torch", 0) == 0) {
    return Unavailable("python3 cannot import torch");
  }
  if (last.rfind("no_cuda", 0) == 0) {
    return Unavailable("torch.cuda.is_available() is false");
  }
  const std::string prefix = "eager_op_s ";
  if (last.rfind(prefix, 0) == 0) {
    const std::string number = last.substr(prefix.size());
    char* end = nullptr;
    const double seconds = std::strtod(number.c_str(), &end);
    if (end != number.c_str() && std::isfinite(seconds) && seconds > 0 &&
        seconds < 1) {
      return seconds;
    }
  }
  return Unavailable("the PyTorch snippet failed" +
                     (last.empty() ? std::string() : ": " + last));
}

Result<double> MeasureEagerOverhead(int gpu, bool quick) {
  // `timeout`: a wedged driver or interpreter must not hang calibrate.
  const std::string command =
      "timeout 300 python3 -c '" + std::string(kEagerSnippet) + "' " +
      std::to_string(gpu) + " " + (quick ? "300" : "3000") + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return Unavailable("cannot start python3");
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  const int status = pclose(pipe);
  if (status == -1) return Unavailable("cannot run python3");
  if (status != 0 && output.find("eager_op_s") == std::string::npos) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string last = LastLine(output);
    return Unavailable(
        (code == 127
             ? std::string("python3 not found")
             : "python3 failed (exit code " + std::to_string(code) + ")") +
        (last.empty() || code == 127 ? std::string() : ": " + last));
  }
  return ParseEagerOutput(output);
}

}  // namespace tessera::cuda
