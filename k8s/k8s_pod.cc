// Kubernetes pods: quantities as apimachinery's resource.Quantity reads
// them, and a v1 Pod's resources as the scheduler sums them (containers,
// init containers, overhead).

#include "k8s/k8s_pod.h"
#include "common/units.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

namespace tessera::k8s {
namespace {

using nlohmann::json;
// Exact arithmetic on a quantity's digits (__extension__: -Wpedantic).
__extension__ using Int128 = __int128;

// Scaled quantities past this are refused: far above any real request, and
// sums over a pod's containers stay far from overflow.
constexpr Int128 kMaxScaled = Int128{1} << 62;
// Digits of a quantity's number that are read exactly (2^126 > 10^37).
constexpr int kMaxDigits = 36;
// Upper bounds on what one pod may ask for: past these a number is a unit
// mistake (bytes given as MiB), answered 400 rather than "fits nowhere".
constexpr int64_t kMaxPodGpus = 1024;
constexpr int64_t kMaxPodGpuMemoryMib = int64_t{1} << 30;  // 1 PiB

struct Suffix {
  std::string_view text;
  int e10 = 0;
  int e2 = 0;
};
constexpr std::array<Suffix, 16> kSuffixes = {{{"Ki", 0, 10},
                                               {"Mi", 0, 20},
                                               {"Gi", 0, 30},
                                               {"Ti", 0, 40},
                                               {"Pi", 0, 50},
                                               {"Ei", 0, 60},
                                               {"n", -9, 0},
                                               {"u", -6, 0},
                                               {"m", -3, 0},
                                               {"", 0, 0},
                                               {"k", 3, 0},
                                               {"M", 6, 0},
                                               {"G", 9, 0},
                                               {"T", 12, 0},
                                               {"P", 15, 0},
                                               {"E", 18, 0}}};

Error NotAQuantity(std::string_view text) {
  return BadInput("'" + std::string(text) +
                  "' is not a quantity (e.g. 250, 500m, 1Gi, 2e3)");
}

// "e3", "E-2": a decimal exponent; false if `s` is not one.
bool ParseExponent(std::string_view s, int* e10) {
  if (s.size() < 2 || (s[0] != 'e' && s[0] != 'E')) return false;
  size_t i = 1;
  const bool negative = s[i] == '-';
  if (s[i] == '+' || s[i] == '-') ++i;
  if (i == s.size() || s.size() - i > 3) return false;
  int value = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    value = value * 10 + (s[i] - '0');
  }
  *e10 = negative ? -value : value;
  return true;
}

// Container resources are JSON strings; Go's Quantity also takes numbers.
bool QuantityText(const json& v, std::string* text) {
  if (v.is_string()) {
    *text = v.get<std::string>();
    return true;
  }
  if (v.is_number()) {
    *text = v.dump();
    return true;
  }
  return false;
}

// The resources one container (or the overhead) asks for.
struct Ask {
  int64_t gpus = 0, gpu_milli = 0, gpu_memory_mib = 0;
  int64_t cpu_milli = 0, memory_mib = 0;
};

std::string At(const std::string& label, std::string_view key) {
  return label + "." + std::string(key);
}

// A whole count of an extended resource.
Result<int64_t> Whole(const std::string& field, const std::string& text,
                      int64_t max, const std::string& what) {
  Result<QuantityValue> q = ParseQuantity(text, 0);
  if (!q) return q.error().WithContext(field);
  if (!q->exact) {
    return BadInput(field + ": '" + text +
                    "' must be a whole number (extended resources are "
                    "counted in whole units)");
  }
  if (q->value > max) {
    return BadInput(field + ": '" + text + "' is more than " + what);
  }
  return q->value;
}

// The quantities of `list` (limits or requests) among the names tessera
// reads; `field` is the list's path.
Status ReadList(const json& list, const std::string& field,
                std::map<std::string, std::string>* out) {
  if (list.is_null()) return {};
  if (!list.is_object()) {
    return BadInput(field + ": must be an object of resource name to quantity");
  }
  for (const auto& [name, value] : list.items()) {
    if (name != kK8sGpuMilli && name != kK8sGpuMemoryMib &&
        name != kK8sWholeGpus && name != "cpu" && name != "memory") {
      continue;
    }
    std::string text;
    if (!QuantityText(value, &text)) {
      return BadInput(At(field, name) +
                      R"(: must be a quantity string (e.g. "250", "1Gi"))");
    }
    (*out)[name] = std::move(text);
  }
  return {};
}

// One container's ask. Extended resources: limits, else requests (they
// must be equal when both are given); cpu and memory: requests, else
// limits, as the API server defaults them.
Result<Ask> ReadContainer(const json& c, const std::string& label) {
  if (!c.is_object()) return BadInput(label + ": must be an object");
  Ask ask;
  if (!c.contains("resources") || c["resources"].is_null()) return ask;
  const json& r = c["resources"];
  const std::string rl = label + ".resources";
  if (!r.is_object()) return BadInput(rl + ": must be an object");
  std::map<std::string, std::string> limits;
  std::map<std::string, std::string> requests;
  if (r.contains("limits")) {
    TESSERA_RETURN_IF_ERROR(ReadList(r["limits"], rl + ".limits", &limits));
  }
  if (r.contains("requests")) {
    TESSERA_RETURN_IF_ERROR(
        ReadList(r["requests"], rl + ".requests", &requests));
  }
  // The value of `name` and the field it came from, or nullptr.
  auto pick = [&](std::string_view name, bool limits_first,
                  std::string* field) -> const std::string* {
    const std::string key(name);
    auto l = limits.find(key);
    auto q = requests.find(key);
    const bool use_limit =
        l != limits.end() && (limits_first || q == requests.end());
    if (use_limit) {
      *field = At(rl + ".limits", name);
      return &l->second;
    }
    if (q != requests.end()) {
      *field = At(rl + ".requests", name);
      return &q->second;
    }
    return nullptr;
  };
  for (std::string_view name :
       {kK8sGpuMilli, kK8sGpuMemoryMib, kK8sWholeGpus}) {
    const std::string key(name);
    if (limits.contains(key) && requests.contains(key)) {
      Result<QuantityValue> a = ParseQuantity(limits[key], 0);
      Result<QuantityValue> b = ParseQuantity(requests[key], 0);
      if (a && b && a->value != b->value) {
        return BadInput(At(rl + ".requests", name) + ": '" + requests[key] +
                        "' differs from the limit '" + limits[key] +
                        "' (an extended resource's request must equal its "
                        "limit)");
      }
    }
  }
  std::string field;
  if (const std::string* t = pick(kK8sGpuMilli, true, &field)) {
    Result<int64_t> v = Whole(field, *t, kFullGpuMilli, "a whole GPU (1000)");
    TESSERA_RETURN_IF_ERROR(v);
    ask.gpu_milli = *v;
  }
  if (const std::string* t = pick(kK8sGpuMemoryMib, true, &field)) {
    Result<int64_t> v = Whole(field, *t, kMaxPodGpuMemoryMib,
                              "any GPU's memory (1 PiB); the unit is MiB");
    TESSERA_RETURN_IF_ERROR(v);
    ask.gpu_memory_mib = *v;
  }
  if (const std::string* t = pick(kK8sWholeGpus, true, &field)) {
    Result<int64_t> v =
        Whole(field, *t, kMaxPodGpus, std::to_string(kMaxPodGpus) + " GPUs");
    TESSERA_RETURN_IF_ERROR(v);
    ask.gpus = *v;
  }
  if (const std::string* t = pick("cpu", false, &field)) {
    Result<QuantityValue> v = ParseQuantity(*t, 3);
    if (!v) return v.error().WithContext(field);
    ask.cpu_milli = v->value;
  }
  if (const std::string* t = pick("memory", false, &field)) {
    Result<QuantityValue> v = ParseQuantity(*t, 0);
    if (!v) return v.error().WithContext(field);
    ask.memory_mib = (v->value + kMiB - 1) / kMiB;
  }
  return ask;
}

// The asks of spec.<key>, a list of containers.
Result<std::vector<Ask>> ReadContainers(const json& spec,
                                        const std::string& label,
                                        const std::string& key, bool required) {
  const std::string field = At(label, key);
  std::vector<Ask> asks;
  if (!spec.contains(key) || spec[key].is_null()) {
    if (required) return BadInput(field + ": missing (a pod has containers)");
    return asks;
  }
  const json& list = spec[key];
  if (!list.is_array()) return BadInput(field + ": must be a list");
  if (required && list.empty()) {
    return BadInput(field + ": empty (a pod has at least one container)");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    Result<Ask> ask =
        ReadContainer(list[i], field + "[" + std::to_string(i) + "]");
    TESSERA_RETURN_IF_ERROR(ask);
    asks.push_back(*ask);
  }
  return asks;
}

Result<std::string> MetaString(const json& meta, const std::string& label,
                               const std::string& key, bool required) {
  const std::string field = At(label, key);
  if (!meta.contains(key) || meta[key].is_null()) {
    if (required) return BadInput(field + ": missing");
    return std::string();
  }
  const json& v = meta[key];
  if (!v.is_string()) return BadInput(field + ": must be a string");
  if (required && v.get<std::string>().empty()) {
    return BadInput(field + ": must not be empty");
  }
  return v.get<std::string>();
}

// Whether the pod's GPU ask is one tessera can serve.
Status CheckGpuAsk(const Ask& a, const std::string& label) {
  const std::string milli(kK8sGpuMilli);
  const std::string memory(kK8sGpuMemoryMib);
  const std::string whole(kK8sWholeGpus);
  if (a.gpu_milli > kFullGpuMilli) {
    return BadInput(label + ": " + milli + " adds up to " +
                    std::to_string(a.gpu_milli) +
                    " over the containers, more than a whole GPU (1000); a "
                    "pod's containers share one GPU's fraction");
  }
  if (a.gpus > 0 && (a.gpu_milli > 0 || a.gpu_memory_mib > 0)) {
    return BadInput(label + ": " + whole + " cannot be combined with " + milli +
                    " or " + memory +
                    ": ask for whole GPUs or a fraction of one");
  }
  if (a.gpu_memory_mib > 0 && a.gpu_milli == 0) {
    return BadInput(label + ": " + memory + " needs " + milli +
                    " too (a fraction of one GPU: its compute in 1..1000 "
                    "milli and its memory)");
  }
  if (a.gpus > kMaxPodGpus || a.gpu_memory_mib > kMaxPodGpuMemoryMib) {
    return BadInput(label +
                    ": the containers ask for more GPUs or GPU "
                    "memory than any node has");
  }
  return {};
}

}  // namespace

Result<QuantityValue> ParseQuantity(std::string_view text, int decimal_scale) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  Int128 mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool seen_point = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (digits == 0 && c == '0') {  // leading zeros carry nothing
      if (seen_point) ++fraction_digits;
      continue;
    }
    if (++digits > kMaxDigits) return NotAQuantity(text);
    mantissa = mantissa * 10 + (c - '0');
    if (seen_point) ++fraction_digits;
  }
  const std::string_view number = s.substr(0, i);
  if (number.empty() || number == ".") return NotAQuantity(text);
  const std::string_view suffix = s.substr(i);
  int e10 = 0;
  int e2 = 0;
  bool known = false;
  for (const Suffix& x : kSuffixes) {
    if (x.text == suffix) {
      e10 = x.e10;
      e2 = x.e2;
      known = true;
    }
  }
  if (!known && !ParseExponent(suffix, &e10)) return NotAQuantity(text);
  if (negative && mantissa != 0) {
    return BadInput("'" + std::string(text) + "' must not be negative");
  }
  const Error too_large = BadInput("'" + std::string(text) + "' is too large");
  // value = mantissa * 10^(e10 - fraction_digits) * 2^e2, scaled.
  int exponent = e10 - fraction_digits + decimal_scale;
  Int128 v = mantissa;
  for (int b = 0; b < e2 && v != 0; ++b) {
    if (v > kMaxScaled) return too_large;
    v *= 2;
  }
  bool exact = true;
  for (; exponent > 0 && v != 0; --exponent) {
    if (v > kMaxScaled) return too_large;
    v *= 10;
  }
  for (; exponent < 0 && v != 0; ++exponent) {
    exact = exact && v % 10 == 0;
    v = v / 10 + (v % 10 != 0 ? 1 : 0);  // rounds up, as Kubernetes does
  }
  if (v > kMaxScaled) return too_large;
  return QuantityValue{static_cast<int64_t>(v), exact};
}

Result<K8sPod> ParseK8sPod(const json& pod, const std::string& label) {
  if (!pod.is_object()) {
    return BadInput(label + ": must be a v1 Pod object, got " +
                    std::string(pod.type_name()));
  }
  const std::string meta_label = At(label, "metadata");
  if (!pod.contains("metadata") || !pod["metadata"].is_object()) {
    return BadInput(meta_label + ": missing, or not an object");
  }
  const json& meta = pod["metadata"];
  K8sPod out;
  Result<std::string> name = MetaString(meta, meta_label, "name", true);
  TESSERA_RETURN_IF_ERROR(name);
  Result<std::string> ns = MetaString(meta, meta_label, "namespace", false);
  TESSERA_RETURN_IF_ERROR(ns);
  Result<std::string> uid = MetaString(meta, meta_label, "uid", false);
  TESSERA_RETURN_IF_ERROR(uid);
  out.ref = {*name, ns->empty() ? "default" : *ns, *uid};

  const std::string spec_label = At(label, "spec");
  if (!pod.contains("spec") || !pod["spec"].is_object()) {
    return BadInput(spec_label + ": missing, or not an object");
  }
  const json& spec = pod["spec"];
  Result<std::vector<Ask>> containers =
      ReadContainers(spec, spec_label, "containers", true);
  TESSERA_RETURN_IF_ERROR(containers);
  Result<std::vector<Ask>> inits =
      ReadContainers(spec, spec_label, "initContainers", false);
  TESSERA_RETURN_IF_ERROR(inits);
  Ask sum;
  for (const Ask& a : *containers) {
    sum.gpus += a.gpus;
    sum.gpu_milli += a.gpu_milli;
    sum.gpu_memory_mib += a.gpu_memory_mib;
    sum.cpu_milli += a.cpu_milli;
    sum.memory_mib += a.memory_mib;
  }
  TESSERA_RETURN_IF_ERROR(CheckGpuAsk(sum, At(spec_label, "containers")));
  for (size_t i = 0; i < inits->size(); ++i) {
    const Ask& a = (*inits)[i];
    TESSERA_RETURN_IF_ERROR(CheckGpuAsk(
        a, At(spec_label, "initContainers") + "[" + std::to_string(i) + "]"));
    // Init containers run one at a time, before the others.
    sum.gpus = std::max(sum.gpus, a.gpus);
    sum.gpu_milli = std::max(sum.gpu_milli, a.gpu_milli);
    sum.gpu_memory_mib = std::max(sum.gpu_memory_mib, a.gpu_memory_mib);
    sum.cpu_milli = std::max(sum.cpu_milli, a.cpu_milli);
    sum.memory_mib = std::max(sum.memory_mib, a.memory_mib);
  }
  TESSERA_RETURN_IF_ERROR(CheckGpuAsk(sum, spec_label));
  if (spec.contains("overhead") && !spec["overhead"].is_null()) {
    std::map<std::string, std::string> overhead;
    const std::string field = At(spec_label, "overhead");
    TESSERA_RETURN_IF_ERROR(ReadList(spec["overhead"], field, &overhead));
    if (auto it = overhead.find("cpu"); it != overhead.end()) {
      Result<QuantityValue> v = ParseQuantity(it->second, 3);
      if (!v) return v.error().WithContext(At(field, "cpu"));
      sum.cpu_milli += v->value;
    }
    if (auto it = overhead.find("memory"); it != overhead.end()) {
      Result<QuantityValue> v = ParseQuantity(it->second, 0);
      if (!v) return v.error().WithContext(At(field, "memory"));
      sum.memory_mib += (v->value + kMiB - 1) / kMiB;
    }
  }
  out.demand.gpus = static_cast<int>(sum.gpus);
  out.demand.gpu_milli = static_cast<int>(sum.gpu_milli);
  out.demand.gpu_memory_mib = sum.gpu_memory_mib;
  out.demand.cpu_milli = sum.cpu_milli;
  out.demand.memory_mib = sum.memory_mib;
  out.managed = sum.gpus > 0 || sum.gpu_milli > 0;
  return out;
}

std::string DescribeK8sDemand(const Resources& d) {
  std::string text;
  if (d.gpus > 0) {
    text = std::to_string(d.gpus) + " whole GPU" + (d.gpus > 1 ? "s" : "");
  } else if (d.gpu_milli > 0) {
    text = std::to_string(d.gpu_milli) + " milli and " +
           std::to_string(d.gpu_memory_mib) + " MiB of one GPU";
  } else {
    text = "no GPU";
  }
  return text + ", " + std::to_string(d.cpu_milli) + " CPU milli, " +
         std::to_string(d.memory_mib) + " MiB memory";
}

}  // namespace tessera::k8s
