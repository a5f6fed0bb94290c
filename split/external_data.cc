// External weights: which files a model's tensors live in, and links to
// them beside the parts so that nothing is copied.
#include <filesystem>
#include <set>

#include "split/split.h"
#include "split/tensor_walk_internal.h"

namespace tessera::split {

namespace fs = std::filesystem;

std::vector<std::string> ExternalDataFiles(const onnx::ModelProto& model) {
  std::set<std::string> files;
  internal::ForEachTensor(model.graph(), [&](const onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto_DataLocation_EXTERNAL) return;
    for (const auto& entry : t.external_data()) {
      if (entry.key() == "location") files.insert(entry.value());
    }
  });
  return {files.begin(), files.end()};
}

Result<std::map<std::string, std::string>> LinkExternalData(
    const std::vector<std::string>& locations, const std::string& model_dir,
    const std::string& out_dir, std::vector<std::string>* warnings) {
  std::map<std::string, std::string> links;
  std::set<std::string> taken;
  for (const std::string& location : locations) {
    const fs::path target =
        fs::absolute(fs::path(model_dir) / location).lexically_normal();
    std::error_code ec;
    if (!fs::exists(target, ec)) continue;  // reported by the checker
    // The file's own name, made unique among the links and never taking
    // the name of a file already there (which is left alone) unless that
    // file is the target itself (linked by an earlier split).
    const fs::path name = fs::path(location).filename();
    std::string link = name.string();
    bool linked = false;
    for (int k = 1;; ++k) {
      const fs::path candidate = fs::path(out_dir) / link;
      if (!taken.contains(link)) {
        if (!fs::exists(fs::symlink_status(candidate, ec))) break;
        if (fs::equivalent(candidate, target, ec)) {
          linked = true;
          break;
        }
      }
      link = name.stem().string() + "_" + std::to_string(k) +
             name.extension().string();
    }
    taken.insert(link);
    if (linked) {
      links.emplace(location, link);
      continue;
    }
    const fs::path path = fs::path(out_dir) / link;
    // A hard link is the file itself; a symbolic link crosses file systems
    // but ONNX Runtime resolves it and refuses a target outside the
    // directory.
    fs::create_hard_link(target, path, ec);
    if (ec) {
      const std::string why = ec.message();
      fs::create_symlink(target, path, ec);
      if (ec) {
        return BadInput(path.string() + ": cannot link to the weights in " +
                        target.string() + ": " + ec.message());
      }
      warnings->push_back(
          path.string() + " is a symbolic link to " + target.string() +
          " (a hard link failed: " + why +
          "); ONNX Runtime refuses weights outside a model's directory, so "
          "move the parts to the weights' file system or copy the file there");
    }
    links.emplace(location, link);
  }
  return links;
}

}  // namespace tessera::split
