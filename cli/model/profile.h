#ifndef TESSERA_CLI_MODEL_PROFILE_H_
#define TESSERA_CLI_MODEL_PROFILE_H_

#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

struct ProfileArgs {
  std::string model;
  std::string device = "a100-80gb";
  std::string devices_yaml;  // --devices: extra/overriding catalog entries
  std::vector<std::string> inputs;
  std::optional<long long> batch;
  bool train = false;
  std::string dtype;  // "" = as exported
  std::string optimizer = "adam";
  std::optional<double> headroom;
  int top = 10;
  bool json = false;
  bool csv = false;
  // Measured operator times of this model (ORT profile JSON or name,ms CSV)
  // to fit the time model to before profiling.
  std::string calibration;
  std::string runtime = "none";  // none, pytorch, onnxruntime
  std::string amp;               // "", bf16, fp16
  bool tf32 = false;
  std::string attention = "auto";
  // --cost-graph: also write the model's cost graph
  // (placer/maxload/cost_graph.h) on --cluster (default: the built-in one) to
  // this file.
  std::string cost_graph;
  std::string cluster;
};

// `tessera profile`: per-operator cost, memory and time on one device.
int RunProfile(const ProfileArgs& args);

struct DevicesArgs {
  std::string devices_yaml;
  bool json = false;
};

// `tessera devices`: the device catalog with its sources.
int RunDevices(const DevicesArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_PROFILE_H_
