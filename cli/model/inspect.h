#ifndef TESSERA_CLI_MODEL_INSPECT_H_
#define TESSERA_CLI_MODEL_INSPECT_H_

#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

struct InspectArgs {
  std::string model;
  std::vector<std::string> inputs;  // NAME=DIMS
  std::optional<long long> batch;
  bool json = false;
  std::string dot;  // path, "-" for stdout, "" for none
};

// `tessera inspect`: loads the model and prints its description. Returns the
// process exit code.
int RunInspect(const InspectArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_INSPECT_H_
