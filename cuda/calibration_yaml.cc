#include "cuda/calibration_yaml.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

namespace tessera::cuda {
namespace {

std::string Format(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

// A double-quoted YAML scalar.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    out += c;
  }
  return out + "\"";
}

// One line of a YAML comment (no line breaks inside).
std::string Comment(const std::string& text) {
  std::string out = "# ";
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out + "\n";
}

std::string GBps(double bytes_per_second) {
  return Format("%.2fGB/s", bytes_per_second / 1e9);
}

std::string Micro(double seconds) { return Format("%.3fus", seconds * 1e6); }

std::string FitText(const TransferFit& fit) {
  return Micro(fit.latency_s) + " + bytes / " + GBps(fit.bytes_per_second) +
         " (" + std::to_string(fit.points) + " sizes, max error " +
         Format("%.1f", fit.max_relative_error * 100) + "%)";
}

// "    efficiency:\n..." for what the sweep measured, or "".
std::string EfficiencyYaml(const EfficiencyCalibration& e) {
  std::string y;
  if (e.kernel_s >= 1e-9) y += "      kernel_time: " + Micro(e.kernel_s) + "\n";
  if (e.eager_op_s >= 1e-9) {
    y += "      eager_op: " + Micro(e.eager_op_s) + "\n";
  }
  if (e.elementwise_bandwidth >= 0.0005) {
    y += "      bandwidth: {elementwise: " +
         Format("%.3f", std::min(e.elementwise_bandwidth, 1.0)) + "}\n";
  }
  for (const bool tensor : {false, true}) {
    std::string curves;
    for (const KernelSweep& sweep : e.sweeps) {
      if (sweep.tensor_cores != tensor || sweep.fit.points == 0 ||
          sweep.fit.max < 0.00005) {
        continue;
      }
      curves +=
          "        " + sweep.kind + ": {max: " + Format("%.4f", sweep.fit.max) +
          ", half_gflop: " + Format("%.6g", sweep.fit.half_flops / 1e9) + "}\n";
    }
    if (!curves.empty()) {
      y += std::string("      ") + (tensor ? "tensor_cores" : "cuda_cores") +
           ":\n" + curves;
    }
  }
  return y.empty() ? "" : "    efficiency:\n" + y;
}

}  // namespace

std::string CalibrationYaml(const CalibrationResult& r, const std::string& name,
                            const std::string& base) {
  std::string y;
  y += Comment("Written by tessera calibrate on " + r.gpu_name + " (gpu " +
               std::to_string(r.gpu_index) + ", sm_" +
               std::to_string(r.compute_major) +
               std::to_string(r.compute_minor) + "), " + r.date + ".");
  y += Comment("Use: tessera profile MODEL --device " + name +
               " --devices THIS_FILE");
  if (r.gemm_size > 0) {
    y += Comment("GEMM: cuBLAS, m = n = k = " + std::to_string(r.gemm_size) +
                 ", median of timed runs.");
  }
  if (r.memory_test_bytes > 0) {
    y += Comment("Memory bandwidth: bytes read + written per second, " +
                 std::to_string(r.memory_test_bytes >> 20) + " MiB copied.");
  }
  if (r.host_to_device.points > 0) {
    y += Comment("Host to device (pinned): " + FitText(r.host_to_device));
  }
  if (r.device_to_host.points > 0) {
    y += Comment("Device to host (pinned): " + FitText(r.device_to_host));
  }
  if (r.p2p_peer >= 0 && r.peer_to_peer.points > 0) {
    y += Comment("Peer to peer to gpu " + std::to_string(r.p2p_peer) + ": " +
                 FitText(r.peer_to_peer));
  }
  if (r.efficiency.kernel_s > 0) {
    y += Comment("Kernel time: an empty kernel in a CUDA graph of many, " +
                 Micro(r.efficiency.kernel_s) + " each.");
  }
  if (r.efficiency.elementwise.points > 0) {
    y += Comment("Elementwise kernel (fp32 y = a x + b): " +
                 FitText(r.efficiency.elementwise) + ".");
  }
  for (const KernelSweep& sweep : r.efficiency.sweeps) {
    if (sweep.fit.points == 0) continue;
    y += Comment(
        "Efficiency " + sweep.kind + " " + sweep.dtype + " (" +
        (sweep.tensor_cores ? "tensor_cores" : "cuda_cores") + "): max x W / " +
        "(W + half) of " + Format("%.3f", sweep.peak_flops / 1e12) +
        " TFLOP/s, fitted to " + std::to_string(sweep.fit.points) +
        " shapes (time less kernel_time), rms error " +
        Format("%.3f", sweep.fit.rms_error) + ", max " +
        Format("%.3f", sweep.fit.max_abs_error) +
        (sweep.dropped > 0
             ? ", " + std::to_string(sweep.dropped) + " too short to count"
             : std::string()) +
        ".");
  }
  for (const std::string& note : r.notes) y += Comment("Note: " + note);

  y += "devices:\n";
  y += "  - name: " + name + "\n";
  if (!base.empty()) y += "    base: " + base + "\n";
  y += "    display_name: " + Quoted(r.gpu_name.empty() ? name : r.gpu_name) +
       "\n";
  y += "    kind: gpu\n";
  if (r.memory_bytes > 0) {
    y += "    memory: " + std::to_string(r.memory_bytes) + "B\n";
  }
  if (r.memory_bandwidth > 0) {
    y += "    memory_bandwidth: " + GBps(r.memory_bandwidth) + "\n";
  }
  const std::pair<const char*, double> throughputs[] = {
      {"fp32_tflops", r.fp32_flops},
      {"tf32_tflops", r.tf32_flops},
      {"fp16_tflops", r.fp16_flops},
      {"bf16_tflops", r.bf16_flops},
      {"int8_tops", r.int8_ops}};
  for (const auto& [key, value] : throughputs) {
    // Below 0.0005 T the figure would print as 0, which MergeYaml rejects.
    if (value >= 5e8) {
      y += std::string("    ") + key + ": " + Format("%.3f", value / 1e12) +
           "\n";
    }
  }
  double pcie = 0;
  for (const TransferFit* fit : {&r.host_to_device, &r.device_to_host}) {
    if (fit->points > 0 && fit->bytes_per_second > 0) {
      pcie = pcie == 0 ? fit->bytes_per_second
                       : std::min(pcie, fit->bytes_per_second);
    }
  }
  if (pcie >= 5e6) y += "    pcie_bandwidth: " + GBps(pcie) + "\n";
  if (r.p2p_peer >= 0 && r.peer_to_peer.bytes_per_second >= 5e6) {
    y +=
        "    nvlink_bandwidth: " + GBps(r.peer_to_peer.bytes_per_second) + "\n";
  }
  if (r.launch_overhead_s > 0) {
    y += "    launch_overhead: " + Micro(r.launch_overhead_s) + "\n";
  }
  y += EfficiencyYaml(r.efficiency);
  y +=
      "    sources: " +
      Quoted("measured by tessera calibrate on " + r.gpu_name + ", " + r.date) +
      "\n";
  return y;
}

}  // namespace tessera::cuda
