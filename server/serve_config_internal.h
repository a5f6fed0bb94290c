#ifndef TESSERA_SERVER_SERVE_CONFIG_INTERNAL_H_
#define TESSERA_SERVER_SERVE_CONFIG_INTERNAL_H_

// The serve config's parser, shared by the files that read its sections:
// serve_config.cc (the top level, pools, nodes, users, k8s and the value
// readers), serve_config_limits.cc, serve_config_tls.cc and
// serve_config_quotas.cc.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/yaml_reader.h"
#include "estimator/device_catalog.h"
#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "scheduler/topology.h"
#include "server/serve_config.h"
#include "service/service.h"

namespace tessera::server::serve_config_internal {

// What the config's sections become (scheduler/).
using scheduler::GpuInfo;

// "list[index]", the label of a list's entry in error messages.
std::string Label(const std::string& list, size_t index);
using scheduler::InterferenceLaw;
using scheduler::kFullGpuMilli;
using scheduler::NodeInfo;
using scheduler::PolicyNames;
using scheduler::QueueAmount;
using scheduler::QueueTree;
using scheduler::ScorerNames;

using Field = YamlReader::Field;
using Fields = YamlReader::Fields;

// Reads one configuration; errors as serve_config.h describes them.
class ConfigParser : public YamlReader {
 public:
  explicit ConfigParser(std::string_view source);

  Result<ServeConfig> Parse(const YAML::Node& root) const;

 private:
  Result<std::string> Name(const Field& f, const std::string& label) const;
  Result<int64_t> Int(const Field& f, const std::string& label, int64_t lo,
                      int64_t hi) const;
  Result<double> Number(const Field& f, const std::string& label) const;
  Result<bool> Bool(const Field& f, const std::string& label) const;
  Result<int64_t> Bytes(const Field& f, const std::string& label) const;
  Result<std::string> OneOf(const Field& f, const std::string& label,
                            std::span<const std::string_view> known,
                            const std::string& what) const;
  Result<const YAML::Node*> List(const Field& f, const std::string& label,
                                 const std::string& example) const;

  Status ParseTop(const Fields& top, ServeConfig* config) const;
  Status ParseK8s(const Field& f, ServeConfig* config) const;
  Status ParsePools(const Fields& top, ServeConfig* config) const;
  Status ParsePool(const YAML::Node& node, const std::string& label,
                   ServeConfig* config) const;
  Status ParseWeights(const Field& f, const std::string& label,
                      PolicyConfig* policy) const;
  Status ParseNode(const YAML::Node& node, const std::string& label,
                   Topology* topology, int64_t* gpus) const;
  Status ParseGpus(const Field& f, const std::string& label, int node_index,
                   Topology* topology, int64_t* gpus) const;
  Status ParseUser(const YAML::Node& node, const std::string& label,
                   std::vector<UserEntry>* users) const;
  // serve_config_limits.cc, serve_config_tls.cc, serve_config_quotas.cc.
  Status ParseLimits(const Field& f, ServeConfig* config) const;
  Status ParseStore(const Field& f, ServeConfig* config) const;
  Status ParseHa(const Field& f, ServeConfig* config) const;
  // After the nodes: `node` names one.
  Status ParseGpuUsage(const Field& f, ServeConfig* config) const;
  Status ParseTls(const Field& f, ServeConfig* config) const;
  Status ParseQuotas(const Field& f, ServeConfig* config) const;
  // serve_config_decisions.cc.
  Status ParseInterference(const Field& f, ServeConfig* config) const;
  Status ParseQuota(const Field& f, const std::string& label,
                    Quota* quota) const;
  // serve_config_queues.cc.
  Status ParseQueues(const Field& f, ServeConfig* config) const;
  Status ParseQueue(const YAML::Node& node, const std::string& label,
                    QueueSpec* queue) const;
  Status ParseQueueAmount(const Field& f, const std::string& label,
                          QueueAmount* amount) const;

  estimator::DeviceCatalog catalog_;
  // policy.h's and admission.h's names, checked before anything starts.
  std::vector<std::string> policies_, scorers_;
};

}  // namespace tessera::server::serve_config_internal

#endif  // TESSERA_SERVER_SERVE_CONFIG_INTERNAL_H_
