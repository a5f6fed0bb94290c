// SplitModel: partition, build, check and write the parts of a plan.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "split/split.h"

namespace tessera::split {
namespace {

namespace fs = std::filesystem;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

bool IsSplitFile(const fs::path& p) {
  const std::string name = p.filename().string();
  return name == "manifest.json" || name == "device_map.json" ||
         (name.starts_with("part_") && name.ends_with(".onnx"));
}

// Creates `dir`, or checks that it may be written into.
Status PrepareDirectory(const std::string& dir, bool force) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      return BadInput(dir + ": exists and is not a directory");
    }
    if (!fs::is_empty(dir, ec) && !force) {
      return BadInput(dir +
                      ": exists and is not empty; choose a new directory, or "
                      "pass --force to replace the parts, manifest.json and "
                      "device_map.json in it");
    }
    if (force) {
      std::vector<fs::path> stale;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.is_regular_file() && IsSplitFile(entry.path())) {
          stale.push_back(entry.path());
        }
      }
      for (const fs::path& p : stale) fs::remove(p, ec);
    }
    return {};
  }
  fs::create_directories(dir, ec);
  if (ec)
    return BadInput(dir + ": cannot create the directory: " + ec.message());
  return {};
}

Status WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Internal(path.string() + ": write failed");
  return {};
}

// Builds and checks every part, serialized; appends the external data
// files that are missing to `warnings`.
Result<std::vector<std::string>> BuildAll(
    const graph::Model& model, const Partition& partition,
    const SplitOptions& options, const PartLocation& where,
    const std::function<void(const std::string&)>& stage,
    std::vector<std::string>* warnings) {
  std::vector<std::string> bytes(partition.parts.size());
  std::vector<std::string> missing_files;
  const PartBuilder builder(model, where);
  for (size_t i = 0; i < bytes.size(); ++i) {
    stage("building part " + std::to_string(i + 1) + " of " +
          std::to_string(bytes.size()));
    auto part = builder.Build(partition, static_cast<int>(i));
    if (!part) return part.error();
    if (options.check) {
      auto missing = CheckPart(*part, static_cast<int>(i), options.out_dir);
      if (!missing) return missing.error();
      for (const std::string& file : *missing) {
        if (std::find(missing_files.begin(), missing_files.end(), file) ==
            missing_files.end()) {
          missing_files.push_back(file);
        }
      }
    }
    if (!part->SerializeToString(&bytes[i])) {
      return Internal("part " + std::to_string(i) +
                      " cannot be serialized (over 2 GiB of inline weights? "
                      "store the model's weights as external data)");
    }
  }
  for (const std::string& file : missing_files) {
    warnings->push_back(
        "the weights' external data file " + file +
        " does not exist: the parts are valid ONNX but cannot run until it "
        "is there");
  }
  return bytes;
}

}  // namespace

Result<SplitResult> SplitModel(const graph::Model& model,
                               const PlanAssignment& plan,
                               const SplitOptions& options) {
  const auto stage = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  SplitResult result;
  stage("partitioning");
  auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> names = graph::UniqueNodeNames(*model.graph);
  auto partition = PartitionGraph(*model.graph, names, plan);
  if (!partition) return partition.error();
  result.partition = std::move(partition).value();
  result.partition_s = Seconds(start);

  // The directory first: the checker resolves external weights from it.
  std::error_code ec;
  const bool existed = fs::exists(options.out_dir, ec);
  TESSERA_RETURN_IF_ERROR(PrepareDirectory(options.out_dir, options.force));
  start = std::chrono::steady_clock::now();
  PartLocation where;
  where.model_dir = fs::path(model.path).parent_path().string();
  if (where.model_dir.empty()) where.model_dir = ".";
  where.out_dir = options.out_dir;
  auto links =
      LinkExternalData(ExternalDataFiles(*model.proto), where.model_dir,
                       options.out_dir, &result.warnings);
  if (!links) return links.error();
  where.links = std::move(links).value();
  auto bytes = BuildAll(model, result.partition, options, where, stage,
                        &result.warnings);
  if (!bytes) {
    if (!existed) fs::remove_all(options.out_dir, ec);  // made just now
    return bytes.error();
  }
  result.manifest =
      ManifestJson(model, plan, result.partition, options.plan_path);
  // Copied constant nodes run wherever they are read: not in the map.
  std::vector<int> mapped = result.partition.node_device;
  for (size_t n = 0; n < mapped.size(); ++n) {
    if (result.partition.node_part[n] < 0) mapped[n] = -1;
  }
  result.device_map = DeviceMapJson(*model.graph, mapped, plan.devices);
  result.build_s = Seconds(start);

  start = std::chrono::steady_clock::now();
  stage("writing " + options.out_dir);
  const fs::path dir(options.out_dir);
  for (size_t i = 0; i < bytes->size(); ++i) {
    const fs::path path = dir / PartFileName(static_cast<int>(i));
    TESSERA_RETURN_IF_ERROR(WriteBytes(path, (*bytes)[i]));
    result.files.push_back(path.string());
  }
  for (const auto& [name, json] :
       {std::pair{"manifest.json", &result.manifest},
        std::pair{"device_map.json", &result.device_map}}) {
    const fs::path path = dir / name;
    TESSERA_RETURN_IF_ERROR(WriteBytes(path, json->dump(2) + "\n"));
    result.files.push_back(path.string());
  }
  result.write_s = Seconds(start);
  return result;
}

}  // namespace tessera::split
