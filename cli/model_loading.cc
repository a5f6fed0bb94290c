#include "cli/model_loading.h"

#include "cli/output.h"

namespace tessera::cli {

Result<graph::Model> LoadModelForCommand(const std::string& path,
                                         const std::vector<std::string>& inputs,
                                         std::optional<long long> batch,
                                         graph::LoadOptions options,
                                         std::string_view verb) {
  for (const std::string& text : inputs) {
    auto binding = graph::ParseInputBinding(text);
    if (!binding) return binding.error();
    options.inputs.push_back(std::move(binding).value());
  }
  if (batch) options.batch = *batch;
  Progress progress(std::string(verb) + " " + path);
  options.progress = [&](std::string_view stage) { progress.Stage(stage); };
  auto model = graph::LoadModel(path, options);
  progress.Done();
  if (model) {
    for (const std::string& w : model->warnings) Warn(path + ": " + w);
  }
  return model;
}

}  // namespace tessera::cli
