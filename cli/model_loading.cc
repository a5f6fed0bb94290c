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
    if (!binding) {
      Error e = binding.error();
      e.message = LoadFlagNames(e.message);
      return e;
    }
    options.inputs.push_back(std::move(binding).value());
  }
  if (batch) options.batch = *batch;
  Progress progress(std::string(verb) + " " + path);
  options.progress = [&](std::string_view stage) { progress.Stage(stage); };
  auto model = graph::LoadModel(path, options);
  progress.Done();
  if (!model) {
    Error e = model.error();
    e.message = LoadFlagNames(e.message);
    return e;
  }
  for (const std::string& w : model->warnings) {
    Warn(path + ": " + LoadFlagNames(w));
  }
  return model;
}

std::string LoadFlagNames(const std::string& m) {
  std::string out;
  size_t i = 0;
  while (i < m.size()) {
    // A field starts the message or follows a context's ": ".
    const bool field = i == 0 || (i >= 2 && m.compare(i - 2, 2, ": ") == 0);
    if (field && m.compare(i, 7, "inputs.") == 0) {
      if (const size_t end = m.find(": ", i); end != std::string::npos) {
        out += "--input '" + m.substr(i + 7, end - i - 7) + "'";
        i = end;
        continue;
      }
    }
    if (field && m.compare(i, 7, "input '") == 0) {
      out += "--";
    } else if (field && (m.compare(i, 6, "batch:") == 0 ||
                         m.compare(i, 6, "batch ") == 0)) {
      out += "--";
    }
    out += m[i++];
  }
  return out;
}

}  // namespace tessera::cli
