// The serve config's `queues:` section: the queue tree with guarantees,
// borrowing limits and weights (scheduler/queue_tree.h, docs/quotas.md).

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/units.h"
#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

constexpr std::string_view kQueueKeys[] = {"name", "guaranteed", "limit",
                                           "weight", "children"};
constexpr std::string_view kAmountKeys[] = {"gpu_milli", "gpu_memory"};

}  // namespace

Status ConfigParser::ParseQueueAmount(const Field& f, const std::string& label,
                                      QueueAmount* amount) const {
  Result<Fields> fields = MapFields(f.value, label, kAmountKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  if (const Field* v = Find(*fields, "gpu_milli")) {
    Result<int64_t> n = Int(*v, label, 0, int64_t{1} << 40);
    TESSERA_RETURN_IF_ERROR(n);
    amount->gpu_milli = *n;
  }
  if (const Field* v = Find(*fields, "gpu_memory")) {
    Result<int64_t> bytes = Bytes(*v, label);
    TESSERA_RETURN_IF_ERROR(bytes);
    amount->gpu_memory_mib = *bytes / kMiB;
  }
  return {};
}

Status ConfigParser::ParseQueue(const YAML::Node& node,
                                const std::string& label,
                                QueueSpec* queue) const {
  Result<Fields> fields = MapFields(node, label, kQueueKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  const Field* name = Find(*fields, "name");
  if (name == nullptr) {
    return BadInput(At(node) + label + ".name: required");
  }
  Result<std::string> text = Name(*name, label);
  TESSERA_RETURN_IF_ERROR(text);
  queue->name = *text;
  if (const Field* g = Find(*fields, "guaranteed")) {
    TESSERA_RETURN_IF_ERROR(
        ParseQueueAmount(*g, label + ".guaranteed", &queue->guaranteed));
  }
  if (const Field* l = Find(*fields, "limit")) {
    // A dimension the limit does not give is not limited.
    QueueAmount limit{-1, -1};
    TESSERA_RETURN_IF_ERROR(ParseQueueAmount(*l, label + ".limit", &limit));
    if (limit.gpu_milli >= 0) queue->limit.gpu_milli = limit.gpu_milli;
    if (limit.gpu_memory_mib >= 0) {
      queue->limit.gpu_memory_mib = limit.gpu_memory_mib;
    }
  }
  if (const Field* w = Find(*fields, "weight")) {
    Result<double> weight = Number(*w, label);
    TESSERA_RETURN_IF_ERROR(weight);
    if (!(*weight > 0) || *weight > 1e6) {
      return Fail(*w, label,
                  "must be above 0 (a share of what is lent), e.g. 1");
    }
    queue->weight = *weight;
  }
  if (const Field* c = Find(*fields, "children")) {
    Result<const YAML::Node*> list = List(*c, label, "name: team-a");
    TESSERA_RETURN_IF_ERROR(list);
    for (size_t i = 0; i < (*list)->size(); ++i) {
      queue->children.emplace_back();
      TESSERA_RETURN_IF_ERROR(ParseQueue(
          (**list)[i], label + ".children[" + std::to_string(i) + "]",
          &queue->children.back()));
    }
  }
  return {};
}

// `queues: [{name, guaranteed: {gpu_milli, gpu_memory}, limit: {...},
// weight, children: [...]}]`: checked as a tree (QueueTree::Make) and
// against the cluster's GPUs.
Status ConfigParser::ParseQueues(const Field& f, ServeConfig* config) const {
  Result<const YAML::Node*> list = List(f, "", "name: org");
  TESSERA_RETURN_IF_ERROR(list);
  std::vector<QueueSpec> top;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    top.emplace_back();
    TESSERA_RETURN_IF_ERROR(ParseQueue(
        (**list)[i], "queues[" + std::to_string(i) + "]", &top.back()));
  }
  Result<QueueTree> tree = QueueTree::Make(top);
  if (!tree) return BadInput(source() + ": " + tree.error().message);
  QueueAmount cluster;
  QueueAmount guaranteed;
  for (const GpuInfo& g : config->service.topology.gpus) {
    cluster.gpu_milli += kFullGpuMilli;
    cluster.gpu_memory_mib += g.memory_mib;
  }
  for (const QueueSpec& q : top) guaranteed += q.guaranteed;
  if (guaranteed.gpu_milli > cluster.gpu_milli) {
    return BadInput(At(f.value) +
                    "queues: the top-level guarantees add up to " +
                    std::to_string(guaranteed.gpu_milli) +
                    " GPU milli, more than the cluster's " +
                    std::to_string(cluster.gpu_milli));
  }
  if (guaranteed.gpu_memory_mib > cluster.gpu_memory_mib) {
    return BadInput(At(f.value) +
                    "queues: the top-level guarantees add up to " +
                    std::to_string(guaranteed.gpu_memory_mib) +
                    " MiB of GPU memory, more than the cluster's " +
                    std::to_string(cluster.gpu_memory_mib));
  }
  config->service.queues = std::move(top);
  return {};
}

}  // namespace tessera::server::serve_config_internal
