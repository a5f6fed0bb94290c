// The serve config's `nodes:` list (serve_config.h, examples/serve.yaml):
// each node's pool, capacity, isolation and GPUs.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

using estimator::DeviceSpec;

constexpr int64_t kMaxGpus = 100000;
constexpr int64_t kMaxGpusPerNode = 64;
constexpr std::string_view kNodeKeys[] = {"name",   "pool", "cpu_milli",
                                          "memory", "gpus", "isolation"};
constexpr std::string_view kIsolations[] = {"none", "mps"};
constexpr std::string_view kGpuKeys[] = {"kind", "count", "memory"};

constexpr std::string_view kGpuUsageKeys[] = {"library", "interval_s", "node"};

}  // namespace

// `gpu_usage: off`, or {library, interval_s, node}.
Status ConfigParser::ParseGpuUsage(const Field& f, ServeConfig* config) const {
  const std::string label = "gpu_usage";
  if (f.value.IsScalar()) {
    const std::string text = f.value.Scalar();
    if (text == "off" || text == "on") {
      config->measure_gpu_usage = text == "on";
      return {};
    }
    Result<bool> on = Bool(f, "");
    if (!on) {
      return Fail(f, "", "must be off, or a map of library, interval_s, node");
    }
    config->measure_gpu_usage = *on;
    return {};
  }
  Result<Fields> fields = MapFields(f.value, label, kGpuUsageKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  ServiceOptions& service = config->service;
  if (const Field* lib = Find(*fields, "library")) {
    Result<std::string> text = Text(*lib, label);
    TESSERA_RETURN_IF_ERROR(text);
    if (text->empty()) return Fail(*lib, label, "must not be empty");
    config->nvml_library = *text;
  }
  if (const Field* every = Find(*fields, "interval_s")) {
    Result<double> s = Number(*every, label);
    TESSERA_RETURN_IF_ERROR(s);
    if (!(*s >= 0.05 && *s <= 3600)) {
      return Fail(*every, label, "must be between 0.05 and 3600 seconds");
    }
    service.usage_interval_s = *s;
  }
  if (const Field* node = Find(*fields, "node")) {
    Result<std::string> name = Text(*node, label);
    TESSERA_RETURN_IF_ERROR(name);
    if (service.topology.FindNode(*name) < 0) {
      return Fail(*node, label, "unknown node '" + *name + "'");
    }
    service.usage_node = *name;
  }
  return {};
}

Status ConfigParser::ParseNode(const YAML::Node& node, const std::string& label,
                               Topology* topology, int64_t* gpus) const {
  Result<Fields> fields = MapFields(node, label, kNodeKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  NodeInfo info;
  const Field* name = Find(*fields, "name");
  if (name == nullptr) return BadInput(At(node) + label + ": missing 'name'");
  Result<std::string> text = Name(*name, label);
  TESSERA_RETURN_IF_ERROR(text);
  info.name = *text;
  for (const NodeInfo& other : topology->nodes) {
    if (other.name == info.name) {
      return Fail(*name, label,
                  "node '" + info.name +
                      "' appears twice (node names must be distinct)");
    }
  }
  info.pool = topology->pools.front();
  if (const Field* f = Find(*fields, "pool")) {
    Result<std::string> pool = Text(*f, label);
    TESSERA_RETURN_IF_ERROR(pool);
    if (std::ranges::find(topology->pools, *pool) == topology->pools.end()) {
      std::string known;
      for (const std::string& p : topology->pools) {
        known += (known.empty() ? "" : ", ") + p;
      }
      return Fail(
          *f, label,
          "unknown pool '" + *pool + "' (the 'pools:' list has " + known + ")");
    }
    info.pool = *pool;
  }
  if (const Field* f = Find(*fields, "isolation")) {
    Result<std::string> isolation = OneOf(*f, label, kIsolations, "isolation");
    TESSERA_RETURN_IF_ERROR(isolation);
    info.isolation = *scheduler::ParseIsolation(*isolation);
  }
  const Field* cpu = Find(*fields, "cpu_milli");
  const Field* memory = Find(*fields, "memory");
  const Field* gpu_list = Find(*fields, "gpus");
  for (auto [f, key] :
       {std::pair{cpu, "cpu_milli"}, std::pair{memory, "memory"},
        std::pair{gpu_list, "gpus"}}) {
    if (f == nullptr) {
      return BadInput(At(node) + label + ": missing '" + key + "'");
    }
  }
  Result<int64_t> cpu_milli = Int(*cpu, label, 0, int64_t{1} << 40);
  TESSERA_RETURN_IF_ERROR(cpu_milli);
  info.cpu_milli = *cpu_milli;
  Result<int64_t> bytes = Bytes(*memory, label);
  TESSERA_RETURN_IF_ERROR(bytes);
  info.memory_mib = *bytes / kMiB;
  const int node_index = static_cast<int>(topology->nodes.size());
  topology->nodes.push_back(std::move(info));
  return ParseGpus(*gpu_list, label, node_index, topology, gpus);
}

// The node's GPUs, "<node>/gpu<i>" in the order listed.
Status ConfigParser::ParseGpus(const Field& f, const std::string& label,
                               int node_index, Topology* topology,
                               int64_t* gpus) const {
  Result<const YAML::Node*> list =
      List(f, label, "{kind: a100-80gb, count: 4}");
  TESSERA_RETURN_IF_ERROR(list);
  NodeInfo& node = topology->nodes[static_cast<size_t>(node_index)];
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const YAML::Node entry = (**list)[i];
    const std::string gpu_label = label + "." + Label("gpus", i);
    Result<Fields> fields = MapFields(entry, gpu_label, kGpuKeys);
    TESSERA_RETURN_IF_ERROR(fields);
    const Field* kind = Find(*fields, "kind");
    if (kind == nullptr) {
      return BadInput(At(entry) + gpu_label +
                      ": missing 'kind' (a catalog name, e.g. a100-80gb)");
    }
    Result<std::string> kind_name = Text(*kind, gpu_label);
    TESSERA_RETURN_IF_ERROR(kind_name);
    Result<const DeviceSpec*> spec = catalog_.Get(*kind_name);
    if (!spec) return Fail(*kind, gpu_label, spec.error().message);
    int64_t memory_mib = (*spec)->memory_bytes / kMiB;
    if (const Field* m = Find(*fields, "memory")) {
      Result<int64_t> bytes = Bytes(*m, gpu_label);
      TESSERA_RETURN_IF_ERROR(bytes);
      if (*bytes < kMiB) return Fail(*m, gpu_label, "must be at least 1MiB");
      memory_mib = *bytes / kMiB;
    }
    int64_t count = 1;
    if (const Field* c = Find(*fields, "count")) {
      Result<int64_t> n = Int(*c, gpu_label, 1, kMaxGpusPerNode);
      TESSERA_RETURN_IF_ERROR(n);
      count = *n;
    }
    if (static_cast<int64_t>(node.gpus.size()) + count > kMaxGpusPerNode ||
        *gpus + count > kMaxGpus) {
      return BadInput(At(entry) + gpu_label + ": more than " +
                      std::to_string(kMaxGpusPerNode) + " GPUs on node '" +
                      node.name + "' or " + std::to_string(kMaxGpus) +
                      " in all");
    }
    for (int64_t c = 0; c < count; ++c) {
      GpuInfo gpu;
      gpu.index = static_cast<int>(node.gpus.size());
      gpu.id = node.name + "/gpu" + std::to_string(gpu.index);
      gpu.node = node_index;
      gpu.kind = *kind_name;
      gpu.memory_mib = memory_mib;
      node.gpus.push_back(static_cast<int>(topology->gpus.size()));
      topology->gpus.push_back(std::move(gpu));
    }
    *gpus += count;
  }
  return {};
}

}  // namespace tessera::server::serve_config_internal
