// Cluster specs: the YAML parser, the built-in default cluster and the links
// a spec leaves out. The format, its defaults and its errors are documented
// in docs/cluster.md; models/clusters/example.yaml is a commented example.

#include "placer/core/cluster.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "common/yaml_reader.h"

namespace tessera::placer {
namespace {

using estimator::DeviceCatalog;
using estimator::DeviceSpec;

// At most this many GPUs in one spec: the cluster keeps a dense n x n link
// matrix (1024^2 links are 24 MiB) and the simulator indexes devices with
// 16 bits. A spec past this is almost certainly a typo in a `count`.
constexpr int64_t kMaxDevices = 1024;
// Unknown-endpoint errors list this many valid ids.
constexpr size_t kIdsListed = 8;

constexpr std::string_view kTopKeys[] = {"name", "nodes", "network", "links"};
constexpr std::string_view kNodeKeys[] = {"name", "interconnect", "gpus"};
constexpr std::string_view kGpuKeys[] = {"kind", "count", "memory_free",
                                         "compute_share"};
constexpr std::string_view kNetworkKeys[] = {"bandwidth", "latency"};
constexpr std::string_view kLinkKeys[] = {"between", "bandwidth", "latency"};

// What a spec says, before the links are derived.
struct GpuEntry {
  const DeviceSpec* spec = nullptr;
  std::optional<int64_t> memory_free;
  double compute_share = 1.0;
};
struct NodeEntry {
  std::string name;
  bool nvlink = true;          // interconnect: nvlink (else pcie)
  std::vector<GpuEntry> gpus;  // one per GPU: `count` already expanded
};
struct NetworkEntry {
  double bandwidth = kDefaultNetworkBandwidth;
  double latency = kDefaultNetworkLatencySeconds;
};

// ---- Building a cluster ----------------------------------------------------

// The link from `a` to `b` when the spec gives none (docs/cluster.md, "Links
// the spec leaves out"). `nvlink_node`: same node, interconnect nvlink.
Link DefaultLink(const ClusterDevice& a, const ClusterDevice& b,
                 bool nvlink_node, const NetworkEntry& network) {
  const double pcie = std::min(a.spec.pcie_bandwidth, b.spec.pcie_bandwidth);
  if (a.node != b.node) {
    // The data crosses each GPU's PCIe link to reach the NIC, so the
    // network is never faster than either of them.
    return Link{std::min(network.bandwidth, pcie), network.latency,
                LinkKind::kNetwork};
  }
  const double nvlink =
      std::min(a.spec.nvlink_bandwidth, b.spec.nvlink_bandwidth);
  if (nvlink_node && nvlink > 0) {
    return Link{nvlink, kNvlinkLatencySeconds, LinkKind::kNvlink};
  }
  return Link{pcie, kPcieLatencySeconds, LinkKind::kPcie};
}

// Devices in node order and the default links between them.
Cluster Assemble(const std::vector<NodeEntry>& nodes,
                 const NetworkEntry& network, const ClusterOptions& options,
                 std::string source) {
  Cluster c;
  c.source = std::move(source);
  std::vector<bool> nvlink_node;
  for (const NodeEntry& node : nodes) {
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      const GpuEntry& gpu = node.gpus[i];
      ClusterDevice d;
      d.id = node.name + "/gpu" + std::to_string(i);
      d.node = node.name;
      d.spec = *gpu.spec;
      d.memory_total = gpu.spec->memory_bytes;
      d.memory_given = gpu.memory_free.has_value();
      const int64_t whole =
          d.memory_total -
          WholeGpuHeadroom(d.memory_total, options.fragmentation);
      d.memory_usable =
          d.memory_given ? *gpu.memory_free : std::max<int64_t>(0, whole);
      d.compute_share = gpu.compute_share;
      c.devices.push_back(std::move(d));
      nvlink_node.push_back(node.nvlink);
    }
  }
  const size_t n = c.devices.size();
  c.links.resize(n * n);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      c.links[a * n + b] = a == b
                               ? Link{std::numeric_limits<double>::infinity(),
                                      0.0, LinkKind::kLocal}
                               : DefaultLink(c.devices[a], c.devices[b],
                                             nvlink_node[a], network);
    }
  }
  return c;
}

// ---- Reading YAML ----------------------------------------------------------

using Field = YamlReader::Field;
using Fields = YamlReader::Fields;

std::string FormatGiB(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g GiB",
                static_cast<double>(bytes) / (int64_t{1} << 30));
  return buf;
}

bool IsValidNodeName(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

// Reads one spec. Every error is kBadInput and reads
// "SOURCE:LINE: FIELD: what is wrong", FIELD like nodes[0].gpus[1].count.
class SpecParser : public YamlReader {
 public:
  SpecParser(std::string_view source, const DeviceCatalog& catalog,
             const ClusterOptions& options)
      : YamlReader(source, "the spec"), catalog_(catalog), options_(options) {}

  Result<Cluster> Parse(const YAML::Node& root) const;

 private:
  Result<double> Bandwidth(const Field& f, const std::string& label) const;
  Result<double> Latency(const Field& f, const std::string& label) const;

  Result<NodeEntry> ParseNode(const YAML::Node& node, size_t index,
                              const std::vector<NodeEntry>& earlier,
                              int64_t* devices) const;
  Status ParseGpu(const YAML::Node& gpu, const std::string& label,
                  NodeEntry* node, int64_t* devices) const;
  Result<int64_t> Count(const Field& f, const std::string& label,
                        int64_t devices) const;
  Result<int64_t> MemoryFree(const Field& f, const std::string& label,
                             const DeviceSpec& spec) const;
  Result<double> Share(const Field& f, const std::string& label) const;
  Result<NetworkEntry> ParseNetwork(const Field& f) const;
  Status ParseLinks(const Field& f, Cluster* cluster) const;
  Result<std::pair<size_t, size_t>> ParseEndpoints(
      const Field& f, const std::string& label, const Cluster& cluster) const;

  const DeviceCatalog& catalog_;
  const ClusterOptions& options_;
};

Result<double> SpecParser::Bandwidth(const Field& f,
                                     const std::string& label) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  Result<double> bw = estimator::ParseBandwidth(*text);
  if (!bw) return Fail(f, label, bw.error().message);
  if (*bw <= 0) return Fail(f, label, "'" + *text + "' must be positive");
  return *bw;
}

Result<double> SpecParser::Latency(const Field& f,
                                   const std::string& label) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  Result<double> seconds = estimator::ParseSeconds(*text);
  if (!seconds) return Fail(f, label, seconds.error().message);
  return *seconds;
}

Result<Cluster> SpecParser::Parse(const YAML::Node& root) const {
  if (root.IsNull()) {
    return BadInput(source() + ": the spec is empty; expected a 'nodes:' list");
  }
  Result<Fields> top = MapFields(root, "", kTopKeys);
  TESSERA_RETURN_IF_ERROR(top);
  if (const Field* name = Find(*top, "name")) {
    TESSERA_RETURN_IF_ERROR(Text(*name, ""));  // documentation only
  }
  const Field* nodes = Find(*top, "nodes");
  if (nodes == nullptr) {
    return BadInput(At(root) + "missing the top-level 'nodes:' list");
  }
  if (!nodes->value.IsSequence() || nodes->value.size() == 0) {
    return Fail(*nodes, "",
                nodes->value.IsSequence()
                    ? "the cluster has no nodes; list at least one"
                    : "expected a list of nodes ('- name: node0'), got " +
                          TypeName(nodes->value));
  }
  std::vector<NodeEntry> entries;
  int64_t devices = 0;
  for (size_t i = 0; i < nodes->value.size(); ++i) {
    Result<NodeEntry> node = ParseNode(nodes->value[i], i, entries, &devices);
    TESSERA_RETURN_IF_ERROR(node);
    entries.push_back(std::move(*node));
  }
  NetworkEntry network;
  if (const Field* f = Find(*top, "network")) {
    Result<NetworkEntry> parsed = ParseNetwork(*f);
    TESSERA_RETURN_IF_ERROR(parsed);
    network = *parsed;
  }
  Cluster cluster = Assemble(entries, network, options_, source());
  if (const Field* f = Find(*top, "links")) {
    TESSERA_RETURN_IF_ERROR(ParseLinks(*f, &cluster));
  }
  return cluster;
}

// `earlier`: the nodes before this one, whose names it must not repeat.
Result<NodeEntry> SpecParser::ParseNode(const YAML::Node& node, size_t index,
                                        const std::vector<NodeEntry>& earlier,
                                        int64_t* devices) const {
  const std::string label = "nodes[" + std::to_string(index) + "]";
  Result<Fields> fields = MapFields(node, label, kNodeKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  NodeEntry entry;
  entry.name = "node" + std::to_string(index);
  if (const Field* f = Find(*fields, "name")) {
    Result<std::string> name = Text(*f, label);
    TESSERA_RETURN_IF_ERROR(name);
    if (!IsValidNodeName(*name)) {
      return Fail(
          *f, label,
          "'" + *name + "' may use only letters, digits, '-', '_' and '.'");
    }
    entry.name = *name;
  }
  for (const NodeEntry& other : earlier) {
    if (other.name == entry.name) {
      const Field* f = Find(*fields, "name");
      return BadInput(At(f != nullptr ? f->where() : node) + label +
                      ".name: node '" + entry.name +
                      "' appears twice (node names must be distinct)");
    }
  }
  if (const Field* f = Find(*fields, "interconnect")) {
    Result<std::string> text = Text(*f, label);
    TESSERA_RETURN_IF_ERROR(text);
    if (*text != "nvlink" && *text != "pcie") {
      return Fail(
          *f, label,
          "'" + *text + "' is not an interconnect (use nvlink or pcie)");
    }
    entry.nvlink = *text == "nvlink";
  }
  const Field* gpus = Find(*fields, "gpus");
  if (gpus == nullptr) {
    return BadInput(At(node) + label + ": missing the 'gpus:' list");
  }
  if (!gpus->value.IsSequence() || gpus->value.size() == 0) {
    return Fail(*gpus, label,
                gpus->value.IsSequence()
                    ? "node '" + entry.name + "' has no GPUs; list at least one"
                    : "expected a list of GPUs ('- kind: a100-80gb'), got " +
                          TypeName(gpus->value));
  }
  for (size_t i = 0; i < gpus->value.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(ParseGpu(gpus->value[i],
                                     label + ".gpus[" + std::to_string(i) + "]",
                                     &entry, devices));
  }
  return entry;
}

// A whole number >= 1 that keeps the spec within kMaxDevices.
Result<int64_t> SpecParser::Count(const Field& f, const std::string& label,
                                  int64_t devices) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  int64_t count = 0;
  auto [end, ec] =
      std::from_chars(text->data(), text->data() + text->size(), count);
  if (text->empty() || ec != std::errc() ||
      end != text->data() + text->size() || count < 1) {
    return Fail(f, label, "'" + *text + "' must be a whole number >= 1");
  }
  if (count > kMaxDevices - devices) {
    return Fail(f, label,
                "the spec would have more than " + std::to_string(kMaxDevices) +
                    " GPUs");
  }
  return count;
}

// A positive size no larger than the GPU's memory.
Result<int64_t> SpecParser::MemoryFree(const Field& f, const std::string& label,
                                       const DeviceSpec& spec) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  Result<int64_t> bytes = estimator::ParseBytes(*text);
  if (!bytes) return Fail(f, label, bytes.error().message);
  if (*bytes <= 0) return Fail(f, label, "'" + *text + "' must be positive");
  if (*bytes > spec.memory_bytes) {
    return Fail(f, label,
                "'" + *text + "' is more than the " + spec.name + " has (" +
                    FormatGiB(spec.memory_bytes) + ")");
  }
  return *bytes;
}

// A plain number in (0, 1].
Result<double> SpecParser::Share(const Field& f,
                                 const std::string& label) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  double share = 0;
  if (!ParseFiniteDouble(*text, &share) || share <= 0 || share > 1) {
    return Fail(f, label,
                "'" + *text + "' must be a number in (0, 1], e.g. 0.5");
  }
  return share;
}

// Appends the GPU entry `gpu` (`count` GPUs) to `node`.
Status SpecParser::ParseGpu(const YAML::Node& gpu, const std::string& label,
                            NodeEntry* node, int64_t* devices) const {
  Result<Fields> fields = MapFields(gpu, label, kGpuKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  const Field* kind = Find(*fields, "kind");
  if (kind == nullptr) {
    return BadInput(At(gpu) + label +
                    ": missing 'kind' (a catalog name, e.g. a100-80gb)");
  }
  Result<std::string> kind_name = Text(*kind, label);
  TESSERA_RETURN_IF_ERROR(kind_name);
  Result<const DeviceSpec*> spec = catalog_.Get(*kind_name);
  if (!spec) return Fail(*kind, label, spec.error().message);
  GpuEntry entry;
  entry.spec = *spec;
  int64_t count = 1;
  if (const Field* f = Find(*fields, "count")) {
    Result<int64_t> parsed = Count(*f, label, *devices);
    TESSERA_RETURN_IF_ERROR(parsed);
    count = *parsed;
  } else if (*devices >= kMaxDevices) {
    return BadInput(At(gpu) + label + ": the spec would have more than " +
                    std::to_string(kMaxDevices) + " GPUs");
  }
  if (const Field* f = Find(*fields, "memory_free")) {
    Result<int64_t> bytes = MemoryFree(*f, label, **spec);
    TESSERA_RETURN_IF_ERROR(bytes);
    entry.memory_free = *bytes;
  }
  if (const Field* f = Find(*fields, "compute_share")) {
    Result<double> share = Share(*f, label);
    TESSERA_RETURN_IF_ERROR(share);
    entry.compute_share = *share;
  }
  *devices += count;
  node->gpus.insert(node->gpus.end(), static_cast<size_t>(count), entry);
  return {};
}

Result<NetworkEntry> SpecParser::ParseNetwork(const Field& f) const {
  Result<Fields> fields = MapFields(f.value, "network", kNetworkKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  NetworkEntry network;
  if (const Field* bw = Find(*fields, "bandwidth")) {
    Result<double> value = Bandwidth(*bw, "network");
    TESSERA_RETURN_IF_ERROR(value);
    network.bandwidth = *value;
  }
  if (const Field* lat = Find(*fields, "latency")) {
    Result<double> value = Latency(*lat, "network");
    TESSERA_RETURN_IF_ERROR(value);
    network.latency = *value;
  }
  return network;
}

Result<std::pair<size_t, size_t>> SpecParser::ParseEndpoints(
    const Field& f, const std::string& label, const Cluster& cluster) const {
  if (!f.value.IsSequence() || f.value.size() != 2) {
    return Fail(f, label,
                "expected two device ids, e.g. [node0/gpu0, node0/gpu1], got " +
                    (f.value.IsSequence()
                         ? "a list of " + std::to_string(f.value.size())
                         : TypeName(f.value)));
  }
  size_t ends[2];
  for (size_t e = 0; e < 2; ++e) {
    const YAML::Node id = f.value[e];
    if (!id.IsScalar()) {
      return Fail(f, label,
                  "a device id must be a single value, got " + TypeName(id));
    }
    auto it = std::ranges::find_if(
        cluster.devices,
        [&](const ClusterDevice& d) { return d.id == id.Scalar(); });
    if (it == cluster.devices.end()) {
      std::string known;
      for (size_t i = 0; i < std::min(kIdsListed, cluster.size()); ++i) {
        known += (i == 0 ? "" : ", ") + cluster.devices[i].id;
      }
      if (cluster.size() > kIdsListed) {
        known += ", ... (" + std::to_string(cluster.size()) + " in all)";
      }
      return Fail(id, Join(label, f.key),
                  "unknown device '" + id.Scalar() +
                      "' (ids are NODE/gpuINDEX; this spec has " + known + ")");
    }
    ends[e] = static_cast<size_t>(it - cluster.devices.begin());
  }
  if (ends[0] == ends[1]) {
    return Fail(f, label,
                "a link joins two different devices; '" +
                    cluster.devices[ends[0]].id + "' is given twice");
  }
  return std::pair{std::min(ends[0], ends[1]), std::max(ends[0], ends[1])};
}

Status SpecParser::ParseLinks(const Field& f, Cluster* cluster) const {
  if (!f.value.IsSequence()) {
    return Fail(f, "",
                "expected a list of links ('- between: [a, b]'), got " +
                    TypeName(f.value));
  }
  std::map<std::pair<size_t, size_t>, int> given;  // pair -> line
  const size_t n = cluster->size();
  for (size_t i = 0; i < f.value.size(); ++i) {
    const YAML::Node entry = f.value[i];
    const std::string label = "links[" + std::to_string(i) + "]";
    Result<Fields> fields = MapFields(entry, label, kLinkKeys);
    TESSERA_RETURN_IF_ERROR(fields);
    const Field* between = Find(*fields, "between");
    if (between == nullptr) {
      return BadInput(At(entry) + label +
                      ": missing 'between: [device, device]'");
    }
    const Field* bw = Find(*fields, "bandwidth");
    const Field* lat = Find(*fields, "latency");
    if (bw == nullptr && lat == nullptr) {
      return BadInput(At(entry) + label +
                      ": gives neither 'bandwidth' nor 'latency'");
    }
    Result<std::pair<size_t, size_t>> pair =
        ParseEndpoints(*between, label, *cluster);
    TESSERA_RETURN_IF_ERROR(pair);
    const int line = entry.Mark().line + 1;
    if (auto [it, fresh] = given.emplace(*pair, line); !fresh) {
      return Fail(*between, label,
                  "the link " + cluster->devices[pair->first].id + " <-> " +
                      cluster->devices[pair->second].id +
                      " is already given at line " +
                      std::to_string(it->second));
    }
    Link link = cluster->links[pair->first * n + pair->second];
    link.kind = LinkKind::kCustom;
    if (bw != nullptr) {
      Result<double> value = Bandwidth(*bw, label);
      TESSERA_RETURN_IF_ERROR(value);
      link.bandwidth = *value;
    }
    if (lat != nullptr) {
      Result<double> value = Latency(*lat, label);
      TESSERA_RETURN_IF_ERROR(value);
      link.latency = *value;
    }
    cluster->links[pair->first * n + pair->second] = link;
    cluster->links[pair->second * n + pair->first] = link;
  }
  return {};
}

}  // namespace

std::vector<std::pair<double, double>> DistinctLinks(const Cluster& c) {
  std::vector<std::pair<double, double>> links;
  for (size_t a = 0; a < c.size(); ++a) {
    for (size_t b = 0; b < c.size(); ++b) {
      if (a == b) continue;
      const Link& l = c.link(a, b);
      links.emplace_back(l.latency, l.bandwidth);
    }
  }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kLocal:
      return "local";
    case LinkKind::kNvlink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kNetwork:
      return "network";
    case LinkKind::kCustom:
      return "custom";
  }
  return "unknown";
}

int64_t WholeGpuHeadroom(int64_t memory_total, double fragmentation) {
  return estimator::kCudaContextBytes +
         std::llround(fragmentation * static_cast<double>(memory_total));
}

Result<Cluster> ParseCluster(std::string_view yaml_text,
                             std::string_view source,
                             const estimator::DeviceCatalog& catalog,
                             const ClusterOptions& options) {
  return ParseYaml<Cluster>(yaml_text, source, [&](const YAML::Node& root) {
    return SpecParser(source, catalog, options).Parse(root);
  });
}

Result<Cluster> LoadCluster(const std::string& path,
                            const estimator::DeviceCatalog& catalog,
                            const ClusterOptions& options) {
  auto text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseCluster(*text, path, catalog, options);
}

Cluster DefaultCluster(const estimator::DeviceCatalog& catalog,
                       const ClusterOptions& options) {
  // A catalog without the kind (an empty one in a test) still gets the
  // built-in figures; a YAML override of a100-80gb is respected.
  const DeviceCatalog built_in = DeviceCatalog::BuiltIn();
  const DeviceSpec* a100 = catalog.Find("a100-80gb");
  if (a100 == nullptr) a100 = built_in.Find("a100-80gb");
  NodeEntry node{.name = "node0", .nvlink = true, .gpus = {}};
  GpuEntry gpu;
  gpu.spec = a100;
  node.gpus.assign(4, gpu);
  return Assemble({node}, NetworkEntry{}, options, "built-in default");
}

}  // namespace tessera::placer
