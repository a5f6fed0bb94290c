// The extender protocol's JSON: ExtenderArgs and ExtenderBindingArgs in,
// the v1 Binding out. Fields tessera does not read are ignored, as Go's
// decoder ignores them (a newer kube-scheduler may send more).

#include <algorithm>
#include <cctype>
#include <optional>

#include "k8s/k8s_extender.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// Longest Kubernetes object name (a DNS subdomain).
constexpr size_t kMaxObjectName = 253;

// obj[name] as Go's encoding/json finds it: the exact key, else one equal
// ignoring case. nullptr when absent or null.
const json* GoField(const json& obj, std::string_view name) {
  if (auto it = obj.find(std::string(name));
      it != obj.end() && !it->is_null()) {
    return &*it;
  }
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    if (key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return it->is_null() ? nullptr : &*it;
    }
  }
  return nullptr;
}

// A DNS subdomain: what pod and namespace names are.
bool IsObjectName(std::string_view s) {
  return !s.empty() && s.size() <= kMaxObjectName &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.';
         });
}

Result<std::string> GoString(const json& obj, std::string_view name,
                             bool required) {
  const std::string field(name);
  const json* v = GoField(obj, name);
  if (v == nullptr) {
    if (required) return BadInput(field + ": missing");
    return std::string();
  }
  if (!v->is_string()) {
    return BadInput(field + ": must be a string, got " +
                    std::string(v->type_name()));
  }
  if (required && v->get<std::string>().empty()) {
    return BadInput(field + ": must not be empty");
  }
  return v->get<std::string>();
}

// The item's kK8sSharingStrategyLabel, if it has one (a string).
std::optional<std::string> SharingStrategy(const json& meta) {
  if (!meta.contains("labels") || !meta["labels"].is_object()) {
    return std::nullopt;
  }
  const json& labels = meta["labels"];
  const auto it = labels.find(std::string(kK8sSharingStrategyLabel));
  if (it == labels.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// The names of a NodeList's items, and their sharing strategy labels.
Status NodeListNames(const json& list, K8sExtenderArgs* args) {
  std::vector<std::string>* names = &args->nodes;
  if (!list.is_object()) {
    return BadInput("Nodes: must be a v1 NodeList object, got " +
                    std::string(list.type_name()));
  }
  if (!list.contains("items") || list["items"].is_null()) return {};
  const json& items = list["items"];
  if (!items.is_array()) return BadInput("Nodes.items: must be a list");
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string field = "Nodes.items[" + std::to_string(i) + "]";
    const json& node = items[i];
    if (!node.is_object() || !node.contains("metadata") ||
        !node["metadata"].is_object()) {
      return BadInput(field + ".metadata: missing, or not an object");
    }
    const json& meta = node["metadata"];
    if (!meta.contains("name") || !meta["name"].is_string() ||
        meta["name"].get<std::string>().empty()) {
      return BadInput(field + ".metadata.name: missing, or not a string");
    }
    names->push_back(meta["name"].get<std::string>());
    if (std::optional<std::string> strategy = SharingStrategy(meta)) {
      args->sharing_strategy[names->back()] = std::move(*strategy);
    }
  }
  return {};
}

}  // namespace

Result<K8sExtenderArgs> ParseExtenderArgs(const json& body) {
  if (!body.is_object()) {
    return BadInput(
        "ExtenderArgs: must be a JSON object {Pod, Nodes | "
        "NodeNames}, got " +
        std::string(body.type_name()));
  }
  K8sExtenderArgs args;
  const json* pod = GoField(body, "Pod");
  if (pod == nullptr) return BadInput("Pod: missing (the pod to place)");
  Result<K8sPod> parsed = ParseK8sPod(*pod, "Pod");
  TESSERA_RETURN_IF_ERROR(parsed);
  args.pod = std::move(*parsed);
  const json* nodes = GoField(body, "Nodes");
  const json* names = GoField(body, "NodeNames");
  if (nodes == nullptr && names == nullptr) {
    return BadInput(
        "ExtenderArgs: neither Nodes nor NodeNames given (the "
        "candidate nodes)");
  }
  if (nodes != nullptr) {
    TESSERA_RETURN_IF_ERROR(NodeListNames(*nodes, &args));
    args.node_list = *nodes;
  }
  if (names != nullptr) {
    if (!names->is_array()) {
      return BadInput("NodeNames: must be a list of node names, got " +
                      std::string(names->type_name()));
    }
    args.has_node_names = true;
    std::vector<std::string> list;
    for (size_t i = 0; i < names->size(); ++i) {
      if (!(*names)[i].is_string()) {
        return BadInput("NodeNames[" + std::to_string(i) +
                        "]: must be a string");
      }
      list.push_back((*names)[i].get<std::string>());
    }
    // kube-scheduler sends one of the two; with both, the objects decide.
    if (nodes == nullptr) args.nodes = std::move(list);
  }
  return args;
}

Result<K8sBindingArgs> ParseBindingArgs(const json& body, bool node_required) {
  if (!body.is_object()) {
    return BadInput(
        "ExtenderBindingArgs: must be a JSON object {PodName, PodNamespace, "
        "PodUID, Node}, got " +
        std::string(body.type_name()));
  }
  K8sBindingArgs args;
  Result<std::string> name = GoString(body, "PodName", true);
  TESSERA_RETURN_IF_ERROR(name);
  Result<std::string> ns = GoString(body, "PodNamespace", false);
  TESSERA_RETURN_IF_ERROR(ns);
  Result<std::string> uid = GoString(body, "PodUID", false);
  TESSERA_RETURN_IF_ERROR(uid);
  Result<std::string> node = GoString(body, "Node", node_required);
  TESSERA_RETURN_IF_ERROR(node);
  args.pod = {*name, ns->empty() ? "default" : *ns, *uid};
  for (const auto& [field, value] : {std::pair{"PodName", &args.pod.name},
                                     std::pair{"PodNamespace", &args.pod.ns}}) {
    if (!IsObjectName(*value)) {
      return BadInput(std::string(field) + ": '" + *value +
                      "' is not a Kubernetes object name (lowercase "
                      "letters, digits, '-' and '.')");
    }
  }
  args.node = *node;
  return args;
}

json BindingJson(const K8sPodRef& pod, const std::string& node,
                 const std::map<std::string, std::string>& annotations) {
  json meta = {{"name", pod.name}, {"namespace", pod.ns}};
  if (!pod.uid.empty()) meta["uid"] = pod.uid;
  if (!annotations.empty()) meta["annotations"] = annotations;
  return {{"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", std::move(meta)},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
}

}  // namespace tessera::k8s
