#ifndef TESSERA_CLI_PLAN_SPLIT_H_
#define TESSERA_CLI_PLAN_SPLIT_H_

#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

struct SplitArgs {
  std::string model;
  std::string plan;                 // --plan: plan.json from `tessera plan -o`
  std::string output;               // -o: the parts' directory
  std::vector<std::string> inputs;  // NAME=DIMS
  std::optional<long long> batch;
  bool force = false;
  bool no_check = false;
  std::string dot;  // --dot: the parts as Graphviz
  bool json = false;
};

// `tessera split`: writes one ONNX model per part of a plan, manifest.json
// and device_map.json, and prints what it wrote. Returns the exit code.
int RunSplit(const SplitArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_PLAN_SPLIT_H_
