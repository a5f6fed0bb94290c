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

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_LOADING_H_
