#ifndef TESSERA_CLI_MODEL_LOADING_H_
#define TESSERA_CLI_MODEL_LOADING_H_

// What every command that reads a model does first: turn --input and --batch
// into LoadOptions, load with progress on stderr, and print the warnings.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace tessera::cli {

// `options` carries anything else the command sets (e.g. float_type);
// `verb` names the work in the progress line ("loading", "profiling").
Result<graph::Model> LoadModelForCommand(const std::string& path,
                                         const std::vector<std::string>& inputs,
                                         std::optional<long long> batch,
                                         graph::LoadOptions options,
                                         std::string_view verb);

// `message` (an error or warning of graph/) with LoadOptions' fields as the
// flags that set them: "inputs.x: ..." is "--input 'x': ...", "input 'x=1'"
// is "--input 'x=1'", "batch" at a field's place is "--batch".
std::string LoadFlagNames(const std::string& message);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_LOADING_H_
