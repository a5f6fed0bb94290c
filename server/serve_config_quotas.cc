// The serve config's `quotas:` section (serve_config.h, examples/serve.yaml).

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/units.h"
#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

constexpr std::string_view kQuotasKeys[] = {"default", "users", "teams"};
constexpr std::string_view kQuotaKeys[] = {
    "max_queued",     "max_running",       "max_gpu_milli",
    "max_gpu_memory", "submissions_per_s", "burst"};

}  // namespace

// `quotas: {default: QUOTA, users: {NAME: QUOTA}, teams: {NAME: QUOTA}}`
// (after the users: a name must be a user, or the team of one).
Status ConfigParser::ParseQuotas(const Field& f, ServeConfig* config) const {
  Result<Fields> fields = MapFields(f.value, "quotas", kQuotasKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  Quotas& quotas = config->service.quotas;
  if (const Field* d = Find(*fields, "default")) {
    TESSERA_RETURN_IF_ERROR(
        ParseQuota(*d, "quotas.default", &quotas.user_default));
  }
  for (const char* kind : {"users", "teams"}) {
    const Field* map = Find(*fields, kind);
    if (map == nullptr) continue;
    const std::string label = std::string("quotas.") + kind;
    if (!map->value.IsMap()) {
      return Fail(*map, "quotas",
                  std::string("expected a map of ") +
                      (kind[0] == 'u' ? "user" : "team") +
                      " name to quota ({alice: {max_running: 4}}), got " +
                      TypeName(map->value));
    }
    for (const auto& kv : map->value) {
      const Field entry{kv.first.IsScalar() ? kv.first.Scalar() : "?", kv.first,
                        kv.second};
      const bool user = kind[0] == 'u';
      const bool known =
          std::ranges::any_of(config->users, [&](const UserEntry& u) {
            return user ? u.user.name == entry.key : u.user.team == entry.key;
          });
      if (!known) {
        return BadInput(At(kv.first) + label + "." + entry.key + ": " +
                        (user ? "no such user in 'users:'"
                              : "no user of 'users:' is in this team"));
      }
      auto& target = user ? quotas.users : quotas.teams;
      if (target.contains(entry.key)) {
        return BadInput(At(kv.first) + label + "." + entry.key +
                        ": given twice");
      }
      TESSERA_RETURN_IF_ERROR(
          ParseQuota(entry, label + "." + entry.key, &target[entry.key]));
    }
  }
  return {};
}

Status ConfigParser::ParseQuota(const Field& f, const std::string& label,
                                Quota* quota) const {
  Result<Fields> fields = MapFields(f.value, label, kQuotaKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  constexpr int64_t kMax = int64_t{1} << 40;
  const std::pair<const char*, std::optional<int64_t>*> counts[] = {
      {"max_queued", &quota->max_queued},
      {"max_running", &quota->max_running},
      {"max_gpu_milli", &quota->max_gpu_milli},
      {"burst", &quota->burst}};
  for (const auto& [key, out] : counts) {
    if (const Field* v = Find(*fields, key)) {
      Result<int64_t> n = Int(*v, label, 0, kMax);
      TESSERA_RETURN_IF_ERROR(n);
      *out = *n;
    }
  }
  if (const Field* v = Find(*fields, "max_gpu_memory")) {
    Result<int64_t> bytes = Bytes(*v, label);
    TESSERA_RETURN_IF_ERROR(bytes);
    quota->max_gpu_memory_mib = *bytes / kMiB;
  }
  if (const Field* v = Find(*fields, "submissions_per_s")) {
    Result<double> rate = Number(*v, label);
    TESSERA_RETURN_IF_ERROR(rate);
    if (!(*rate > 0) || *rate > 1e6) {
      return Fail(*v, label,
                  "must be a rate above 0 (submissions per second), e.g. 5");
    }
    quota->submissions_per_s = *rate;
  }
  return {};
}

}  // namespace tessera::server::serve_config_internal
