// The service's configuration file: a YAML reader in the style of the
// cluster spec's (placer/cluster.cc): every error reads
// "SOURCE:LINE: FIELD: what is wrong", unknown keys get a suggestion.

#include "server/serve_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <utility>

#include "common/strings.h"
#include "common/units.h"
#include "common/yaml_reader.h"
#include "estimator/device_catalog.h"
#include "launch/launcher_config.h"
#include "scheduler/admission.h"
#include "scheduler/policy.h"
#include "server/serve_config_internal.h"

namespace tessera::server {
namespace {

using estimator::DeviceCatalog;
using estimator::DeviceSpec;

// A count past these is almost certainly a typo; the openb trace's cluster,
// the largest this project replays, has 6,212 GPUs and 8 per node.

constexpr std::string_view kTopKeys[] = {"listen",
                                         "db",
                                         "log_dir",
                                         "scorer",
                                         "kill_grace_s",
                                         "model_headroom",
                                         "limits",
                                         "pools",
                                         "nodes",
                                         "users",
                                         "k8s_extender",
                                         "k8s",
                                         "launcher",
                                         "tls",
                                         "quotas",
                                         "queues",
                                         "model_roots",
                                         "interference",
                                         "calibrate_interference",
                                         "model_default_work_s",
                                         "elastic_release_grace_s",
                                         "share_unisolated",
                                         "gpu_usage",
                                         "store",
                                         "ha"};
constexpr std::string_view kPoolKeys[] = {"name", "policy", "preemption",
                                          "weights", "on_oom"};
constexpr std::string_view kOnOom[] = {"fail", "requeue"};
constexpr std::string_view kUserKeys[] = {"name", "role", "team",
                                          "token_sha256", "token_name"};
constexpr std::string_view kK8sKeys[] = {"pool",       "api_server",
                                         "token_file", "ca_file",
                                         "resync_s",   "allow_unauthenticated"};

bool IsValidName(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

bool IsHex64(std::string_view text) {
  return text.size() == 64 && std::ranges::all_of(text, [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                  (c >= 'A' && c <= 'F');
         });
}

std::string Lower(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

std::vector<std::string_view> Views(const std::vector<std::string>& names) {
  return {names.begin(), names.end()};
}

}  // namespace

namespace serve_config_internal {

std::string Label(const std::string& list, size_t index) {
  return list + "[" + std::to_string(index) + "]";
}

ConfigParser::ConfigParser(std::string_view source)
    : YamlReader(source, "the configuration"),
      catalog_(DeviceCatalog::BuiltIn()),
      policies_(PolicyNames()),
      scorers_(ScorerNames()) {}

Result<std::string> ConfigParser::Name(const Field& f,
                                       const std::string& label) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  if (!IsValidName(*text)) {
    return Fail(
        f, label,
        "'" + *text + "' may use only letters, digits, '-', '_' and '.'");
  }
  return text;
}

Result<int64_t> ConfigParser::Int(const Field& f, const std::string& label,
                                  int64_t lo, int64_t hi) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  int64_t value = 0;
  auto [end, ec] =
      std::from_chars(text->data(), text->data() + text->size(), value);
  if (text->empty() || ec != std::errc() ||
      end != text->data() + text->size() || value < lo || value > hi) {
    return Fail(f, label,
                "'" + *text + "' must be a whole number from " +
                    std::to_string(lo) + " to " + std::to_string(hi));
  }
  return value;
}

// A finite number >= 0.
Result<double> ConfigParser::Number(const Field& f,
                                    const std::string& label) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  double value = 0;
  if (!ParseFiniteDouble(*text, &value) || value < 0) {
    return Fail(f, label, "'" + *text + "' must be a number >= 0");
  }
  return value;
}

Result<bool> ConfigParser::Bool(const Field& f,
                                const std::string& label) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  if (*text == "true" || *text == "yes") return true;
  if (*text == "false" || *text == "no") return false;
  return Fail(f, label, "'" + *text + "' must be true or false");
}

// A size with a unit ("256GiB"), or a plain number of bytes.
Result<int64_t> ConfigParser::Bytes(const Field& f,
                                    const std::string& label) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  int64_t plain = 0;
  auto [end, ec] =
      std::from_chars(text->data(), text->data() + text->size(), plain);
  Result<int64_t> bytes =
      ec == std::errc() && end == text->data() + text->size()
          ? Result<int64_t>(plain)
          : ParseBytes(*text);
  if (!bytes) return Fail(f, label, bytes.error().message);
  if (*bytes <= 0) return Fail(f, label, "'" + *text + "' must be positive");
  return bytes;
}

Result<std::string> ConfigParser::OneOf(const Field& f,
                                        const std::string& label,
                                        std::span<const std::string_view> known,
                                        const std::string& what) const {
  Result<std::string> text = Text(f, label);
  TESSERA_RETURN_IF_ERROR(text);
  if (std::ranges::find(known, *text) == known.end()) {
    return Fail(f, label,
                "unknown " + what + " '" + *text + "' (" +
                    DidYouMean(*text, known) + "known: " + JoinNames(known) +
                    ")");
  }
  return text;
}

Result<const YAML::Node*> ConfigParser::List(const Field& f,
                                             const std::string& label,
                                             const std::string& example) const {
  if (!f.value.IsSequence() || f.value.size() == 0) {
    return Fail(f, label,
                f.value.IsSequence()
                    ? "the list is empty; give at least one entry"
                    : "expected a list ('- " + example + "'), got " +
                          TypeName(f.value));
  }
  return &f.value;
}

Result<ServeConfig> ConfigParser::Parse(const YAML::Node& root) const {
  if (root.IsNull()) {
    return BadInput(source() +
                    ": the configuration is empty; expected at least "
                    "'nodes:' and 'users:'");
  }
  Result<Fields> top = MapFields(root, "", kTopKeys);
  TESSERA_RETURN_IF_ERROR(top);
  ServeConfig config;
  TESSERA_RETURN_IF_ERROR(ParseTop(*top, &config));
  TESSERA_RETURN_IF_ERROR(ParsePools(*top, &config));
  if (const Field* launcher = Find(*top, "launcher")) {
    TESSERA_RETURN_IF_ERROR(
        launch::ParseLauncherConfig(*this, *launcher, &config.launcher));
  }
  if (const Field* k8s = Find(*top, "k8s")) {
    TESSERA_RETURN_IF_ERROR(ParseK8s(*k8s, &config));
  }
  if (const Field* tls = Find(*top, "tls")) {
    TESSERA_RETURN_IF_ERROR(ParseTls(*tls, &config));
  }

  const Field* nodes = Find(*top, "nodes");
  if (nodes == nullptr) {
    return BadInput(At(root) + "missing the top-level 'nodes:' list");
  }
  Result<const YAML::Node*> node_list = List(*nodes, "", "name: node0");
  TESSERA_RETURN_IF_ERROR(node_list);
  int64_t gpus = 0;
  for (size_t i = 0; i < (*node_list)->size(); ++i) {
    TESSERA_RETURN_IF_ERROR(ParseNode((**node_list)[i], Label("nodes", i),
                                      &config.service.topology, &gpus));
  }

  if (const Field* f = Find(*top, "store")) {
    if (Find(*top, "db") != nullptr) {
      return Fail(*f, "",
                  "give the database once: 'db: PATH' or 'store:', not both");
    }
    TESSERA_RETURN_IF_ERROR(ParseStore(*f, &config));
  }
  if (const Field* f = Find(*top, "ha")) {
    TESSERA_RETURN_IF_ERROR(ParseHa(*f, &config));
  }
  if (const Field* f = Find(*top, "gpu_usage")) {
    TESSERA_RETURN_IF_ERROR(ParseGpuUsage(*f, &config));
  }
  const Field* users = Find(*top, "users");
  if (users == nullptr) {
    return BadInput(At(root) +
                    "missing the top-level 'users:' list (nobody could call "
                    "the API)");
  }
  Result<const YAML::Node*> user_list = List(*users, "", "name: alice");
  TESSERA_RETURN_IF_ERROR(user_list);
  for (size_t i = 0; i < (*user_list)->size(); ++i) {
    TESSERA_RETURN_IF_ERROR(
        ParseUser((**user_list)[i], Label("users", i), &config.users));
  }
  if (const Field* f = Find(*top, "interference")) {
    TESSERA_RETURN_IF_ERROR(ParseInterference(*f, &config));
  }
  if (const Field* quotas = Find(*top, "quotas")) {
    TESSERA_RETURN_IF_ERROR(ParseQuotas(*quotas, &config));
  }
  if (const Field* queues = Find(*top, "queues")) {
    TESSERA_RETURN_IF_ERROR(ParseQueues(*queues, &config));
  }
  return config;
}

// The scalar settings and `limits`.
Status ConfigParser::ParseTop(const Fields& top, ServeConfig* config) const {
  ServiceOptions& service = config->service;
  if (const Field* f = Find(top, "listen")) {
    Result<std::string> text = Text(*f, "");
    TESSERA_RETURN_IF_ERROR(text);
    Result<ListenAddress> address = ParseListenAddress(*text);
    if (!address) return Fail(*f, "", address.error().message);
    config->listen_host = address->host;
    config->listen_port = address->port;
  }
  for (auto [key, target] : {std::pair{"db", &service.db_path},
                             std::pair{"log_dir", &service.log_dir}}) {
    if (const Field* f = Find(top, key)) {
      Result<std::string> text = Text(*f, "");
      TESSERA_RETURN_IF_ERROR(text);
      *target = *text;
    }
  }
  if (const Field* f = Find(top, "scorer")) {
    Result<std::string> scorer = OneOf(*f, "", Views(scorers_), "scorer");
    TESSERA_RETURN_IF_ERROR(scorer);
    service.scorer = *scorer;
  }
  if (const Field* f = Find(top, "kill_grace_s")) {
    Result<double> seconds = Number(*f, "");
    TESSERA_RETURN_IF_ERROR(seconds);
    service.kill_grace_s = *seconds;
  }
  if (const Field* f = Find(top, "elastic_release_grace_s")) {
    Result<double> seconds = Number(*f, "");
    TESSERA_RETURN_IF_ERROR(seconds);
    service.elastic_release_grace_s = *seconds;
  }
  if (const Field* f = Find(top, "model_headroom")) {
    Result<double> headroom = Number(*f, "");
    TESSERA_RETURN_IF_ERROR(headroom);
    service.model_headroom = *headroom;
  }
  if (const Field* f = Find(top, "calibrate_interference")) {
    Result<bool> on = Bool(*f, "");
    TESSERA_RETURN_IF_ERROR(on);
    service.calibrate_interference = *on;
  }
  if (const Field* f = Find(top, "model_default_work_s")) {
    Result<double> seconds = Number(*f, "");
    TESSERA_RETURN_IF_ERROR(seconds);
    if (!(*seconds > 0) || *seconds > 1e9) {
      return Fail(*f, "", "must be more than 0 and at most 1e9 seconds");
    }
    service.model_default_work_s = *seconds;
  }
  if (const Field* f = Find(top, "limits")) {
    TESSERA_RETURN_IF_ERROR(ParseLimits(*f, config));
  }
  if (const Field* f = Find(top, "model_roots")) {
    Result<const YAML::Node*> roots = List(*f, "", "/srv/models");
    TESSERA_RETURN_IF_ERROR(roots);
    for (size_t i = 0; i < (*roots)->size(); ++i) {
      const Field root{Label("model_roots", i), f->key_node, (**roots)[i]};
      Result<std::string> dir = Text(root, "");
      TESSERA_RETURN_IF_ERROR(dir);
      service.model_roots.push_back(*dir);
    }
  }
  if (const Field* f = Find(top, "k8s_extender")) {
    Result<bool> on = Bool(*f, "");
    TESSERA_RETURN_IF_ERROR(on);
    config->k8s_extender = *on;
  }
  // Jobs share a GPU nothing isolates only when asked (issue 31).
  service.topology.share_unisolated = false;
  if (const Field* f = Find(top, "share_unisolated")) {
    Result<bool> on = Bool(*f, "");
    TESSERA_RETURN_IF_ERROR(on);
    service.topology.share_unisolated = *on;
  }
  return {};
}

// The Kubernetes extender's settings (after the pools: `pool` names one).
Status ConfigParser::ParseK8s(const Field& f, ServeConfig* config) const {
  Result<Fields> fields = MapFields(f.value, "k8s", kK8sKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  k8s::K8sConfig& k8s = config->k8s;
  if (const Field* pool = Find(*fields, "pool")) {
    Result<std::string> name =
        OneOf(*pool, "k8s", Views(config->service.topology.pools), "pool");
    TESSERA_RETURN_IF_ERROR(name);
    k8s.pool = *name;
  }
  if (const Field* url = Find(*fields, "api_server")) {
    Result<std::string> text = Text(*url, "k8s");
    TESSERA_RETURN_IF_ERROR(text);
    std::string u = *text;
    while (!u.empty() && u.back() == '/') u.pop_back();
    const size_t scheme = u.find("://");
    const std::string rest =
        scheme == std::string::npos ? "" : u.substr(scheme + 3);
    if ((u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) ||
        rest.empty() || rest.find('/') != std::string::npos) {
      return Fail(*url, "k8s",
                  "'" + *text +
                      "' must be http(s)://HOST[:PORT], e.g. "
                      "https://10.0.0.1:6443 (no path)");
    }
    k8s.api_server = u;
  }
  for (auto [key, target] : {std::pair{"token_file", &k8s.token_file},
                             std::pair{"ca_file", &k8s.ca_file}}) {
    if (const Field* file = Find(*fields, key)) {
      Result<std::string> text = Text(*file, "k8s");
      TESSERA_RETURN_IF_ERROR(text);
      *target = *text;
    }
  }
  if (const Field* resync = Find(*fields, "resync_s")) {
    Result<int64_t> seconds = Int(*resync, "k8s", 0, 86400);
    TESSERA_RETURN_IF_ERROR(seconds);
    k8s.resync_s = static_cast<int>(*seconds);
  }
  if (const Field* open = Find(*fields, "allow_unauthenticated")) {
    Result<bool> on = Bool(*open, "k8s");
    TESSERA_RETURN_IF_ERROR(on);
    k8s.allow_unauthenticated = *on;
  }
  return {};
}

// Without `pools:`, one fifo pool named "default".
Status ConfigParser::ParsePools(const Fields& top, ServeConfig* config) const {
  const Field* pools = Find(top, "pools");
  if (pools == nullptr) {
    config->service.topology.pools = {"default"};
    config->service.policies["default"] = PolicyConfig{};
    return {};
  }
  Result<const YAML::Node*> list =
      List(*pools, "", "{name: a100, policy: backfill}");
  TESSERA_RETURN_IF_ERROR(list);
  for (size_t i = 0; i < (*list)->size(); ++i) {
    TESSERA_RETURN_IF_ERROR(ParsePool((**list)[i], Label("pools", i), config));
  }
  return {};
}

Status ConfigParser::ParsePool(const YAML::Node& node, const std::string& label,
                               ServeConfig* config) const {
  Result<Fields> fields = MapFields(node, label, kPoolKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  const Field* name_field = Find(*fields, "name");
  if (name_field == nullptr) {
    return BadInput(At(node) + label + ": missing 'name'");
  }
  Result<std::string> name = Name(*name_field, label);
  TESSERA_RETURN_IF_ERROR(name);
  std::vector<std::string>& pools = config->service.topology.pools;
  if (std::ranges::find(pools, *name) != pools.end()) {
    return Fail(*name_field, label,
                "pool '" + *name +
                    "' appears twice (pool names must be "
                    "distinct)");
  }
  PolicyConfig policy;
  if (const Field* f = Find(*fields, "policy")) {
    Result<std::string> text = OneOf(*f, label, Views(policies_), "policy");
    TESSERA_RETURN_IF_ERROR(text);
    policy.name = *text;
  }
  if (const Field* f = Find(*fields, "preemption")) {
    Result<bool> on = Bool(*f, label);
    TESSERA_RETURN_IF_ERROR(on);
    if (*on && policy.name != "priority") {
      return Fail(*f, label,
                  "preemption applies only to the 'priority' policy (this "
                  "pool's is '" +
                      policy.name + "')");
    }
    policy.preemption = *on;
  }
  if (const Field* f = Find(*fields, "weights")) {
    if (policy.name != "fair-share") {
      return Fail(*f, label,
                  "weights apply only to the 'fair-share' policy (this "
                  "pool's is '" +
                      policy.name + "')");
    }
    TESSERA_RETURN_IF_ERROR(ParseWeights(*f, label, &policy));
  }
  if (const Field* f = Find(*fields, "on_oom")) {
    Result<std::string> text = OneOf(*f, label, kOnOom, "on_oom");
    TESSERA_RETURN_IF_ERROR(text);
    if (*text == "requeue") config->service.requeue_oom_pools.insert(*name);
  }
  pools.push_back(*name);
  config->service.policies[*name] = std::move(policy);
  return {};
}

// {user or team: positive weight}.
Status ConfigParser::ParseWeights(const Field& f, const std::string& label,
                                  PolicyConfig* policy) const {
  const std::string field = Join(label, "weights");
  if (!f.value.IsMap()) {
    return Fail(f, label,
                "expected a map of user or team to weight ({alice: 2}), got " +
                    TypeName(f.value));
  }
  for (const auto& kv : f.value) {
    const Field entry{kv.first.IsScalar() ? kv.first.Scalar() : "?", kv.first,
                      kv.second};
    if (!kv.first.IsScalar() || !IsValidName(entry.key)) {
      return BadInput(At(kv.first) + field +
                      ": a key must be a user or team name");
    }
    Result<double> weight = Number(entry, field);
    TESSERA_RETURN_IF_ERROR(weight);
    if (*weight <= 0) {
      return Fail(entry, field, "a weight must be positive");
    }
    if (!policy->weights.emplace(entry.key, *weight).second) {
      return Fail(entry, field, "given twice");
    }
  }
  return {};
}

Status ConfigParser::ParseUser(const YAML::Node& node, const std::string& label,
                               std::vector<UserEntry>* users) const {
  Result<Fields> fields = MapFields(node, label, kUserKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  UserEntry entry;
  const Field* name = Find(*fields, "name");
  if (name == nullptr) return BadInput(At(node) + label + ": missing 'name'");
  Result<std::string> text = Name(*name, label);
  TESSERA_RETURN_IF_ERROR(text);
  entry.user.name = *text;
  for (const UserEntry& other : *users) {
    if (other.user.name == entry.user.name) {
      return Fail(*name, label,
                  "user '" + entry.user.name +
                      "' appears twice (user names must be distinct)");
    }
  }
  if (const Field* f = Find(*fields, "role")) {
    constexpr std::string_view kRoles[] = {"user", "admin", "k8s-scheduler"};
    Result<std::string> role = OneOf(*f, label, kRoles, "role");
    TESSERA_RETURN_IF_ERROR(role);
    entry.user.admin = *role == "admin";
    entry.k8s_scheduler = *role == "k8s-scheduler";
  }
  if (const Field* f = Find(*fields, "team")) {
    Result<std::string> team = Name(*f, label);
    TESSERA_RETURN_IF_ERROR(team);
    entry.user.team = *team;
  }
  if (const Field* f = Find(*fields, "token_name")) {
    // Which token this is, in the audit trail (a CI bot's, a laptop's).
    Result<std::string> token_name = Name(*f, label);
    TESSERA_RETURN_IF_ERROR(token_name);
    entry.user.token_name = *token_name;
  }
  const Field* token = Find(*fields, "token_sha256");
  if (token == nullptr) {
    return BadInput(At(node) + label +
                    ": missing 'token_sha256' (printf %s TOKEN | sha256sum)");
  }
  Result<std::string> hash = Text(*token, label);
  TESSERA_RETURN_IF_ERROR(hash);
  if (!IsHex64(*hash)) {
    return Fail(*token, label,
                "must be 64 hex digits, the SHA-256 of the token (printf %s "
                "TOKEN | sha256sum), got " +
                    std::to_string(hash->size()) + " characters");
  }
  entry.token_sha256 = Lower(*hash);
  for (const UserEntry& other : *users) {
    if (other.token_sha256 == entry.token_sha256) {
      return Fail(*token, label,
                  "the same token as user '" + other.user.name +
                      "' (every user needs their own)");
    }
  }
  users->push_back(std::move(entry));
  return {};
}

}  // namespace serve_config_internal

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return BadInput(quoted + " is not HOST:PORT (e.g. 127.0.0.1:8471)");
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return BadInput(quoted + ": write an IPv6 host in brackets, [::1]:8471");
  }
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(),
                                   port_text.data() + port_text.size(), port);
  if (host.empty() || port_text.empty() || ec != std::errc() ||
      end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return BadInput(quoted +
                    " is not HOST:PORT with a port from 0 to 65535 (0: any "
                    "free port)");
  }
  return ListenAddress{std::string(host), port};
}

Result<ServeConfig> ParseServeConfig(std::string_view yaml_text,
                                     std::string_view source) {
  return ParseYaml<ServeConfig>(yaml_text, source, [&](const YAML::Node& root) {
    return serve_config_internal::ConfigParser(source).Parse(root);
  });
}

Result<ServeConfig> LoadServeConfig(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseServeConfig(*text, path);
}

}  // namespace tessera::server
