// The serve config's `store:` (serve_config.h, examples/serve-ha.yaml):
// `store: {sqlite: PATH}` (what `db: PATH` also says; the default) or
// `store: {postgres: {url: URL, password_file: FILE}}`; and `ha:`, how the
// replicas sharing a PostgreSQL store elect their leader.

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

constexpr std::string_view kStoreKeys[] = {"sqlite", "postgres"};
constexpr std::string_view kPostgresKeys[] = {"url", "password_file"};
constexpr std::string_view kHaKeys[] = {"lease_s", "lease_renew_s", "replica",
                                        "advertise"};

}  // namespace

Status ConfigParser::ParseStore(const Field& f, ServeConfig* config) const {
  const std::string label = "store";
  Result<Fields> fields = MapFields(f.value, label, kStoreKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  const Field* sqlite = Find(*fields, "sqlite");
  const Field* postgres = Find(*fields, "postgres");
  if ((sqlite == nullptr) == (postgres == nullptr)) {
    return Fail(f, "", "give exactly one of sqlite: PATH and postgres: {url}");
  }
  if (sqlite != nullptr) {
    Result<std::string> path = Text(*sqlite, label);
    TESSERA_RETURN_IF_ERROR(path);
    if (path->empty()) return Fail(*sqlite, label, "must not be empty");
    config->service.db_path = *path;
    return {};
  }
  const std::string pg = "store.postgres";
  Result<Fields> keys = MapFields(postgres->value, pg, kPostgresKeys);
  TESSERA_RETURN_IF_ERROR(keys);
  const Field* url = Find(*keys, "url");
  if (url == nullptr) {
    return Fail(*postgres, label,
                "missing 'url' (postgresql://USER@HOST:PORT/DBNAME)");
  }
  Result<std::string> text = Text(*url, pg);
  TESSERA_RETURN_IF_ERROR(text);
  if (text->empty()) return Fail(*url, pg, "must not be empty");
  config->service.store.postgres_url = *text;
  if (const Field* file = Find(*keys, "password_file")) {
    Result<std::string> path = Text(*file, pg);
    TESSERA_RETURN_IF_ERROR(path);
    if (path->empty()) return Fail(*file, pg, "must not be empty");
    config->service.store.postgres_password_file = *path;
  }
  // Replicas share PostgreSQL: one leads by the lease, even when alone.
  if (!config->service.replica) config->service.replica.emplace();
  return {};
}

Status ConfigParser::ParseHa(const Field& f, ServeConfig* config) const {
  const std::string label = "ha";
  if (config->service.store.postgres_url.empty()) {
    return Fail(f, "",
                "replicas need 'store: {postgres: {url: ...}}' (one SQLite "
                "file cannot be shared by several machines)");
  }
  Result<Fields> fields = MapFields(f.value, label, kHaKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  service::ReplicaOptions& r = *config->service.replica;
  for (const auto& [key, target] :
       {std::pair{"lease_s", &r.lease_s},
        std::pair{"lease_renew_s", &r.lease_renew_s}}) {
    const Field* v = Find(*fields, key);
    if (v == nullptr) continue;
    Result<double> n = Number(*v, label);
    TESSERA_RETURN_IF_ERROR(n);
    if (!(*n > 0) || *n > 3600) {
      return Fail(*v, label, "must be above 0 and at most 3600 seconds");
    }
    *target = *n;
  }
  if (!(r.lease_s >= 2 * r.lease_renew_s)) {
    char why[200];
    std::snprintf(why, sizeof why,
                  "ha.lease_s (%g) must be at least twice ha.lease_renew_s "
                  "(%g): a leader renews several times before its lease "
                  "lapses",
                  r.lease_s, r.lease_renew_s);
    return Fail(f, "", why);
  }
  for (const auto& [key, target] :
       {std::pair{"replica", &r.name}, std::pair{"advertise", &r.address}}) {
    const Field* v = Find(*fields, key);
    if (v == nullptr) continue;
    Result<std::string> text = Text(*v, label);
    TESSERA_RETURN_IF_ERROR(text);
    if (text->empty()) return Fail(*v, label, "must not be empty");
    *target = *text;
  }
  return {};
}

}  // namespace tessera::server::serve_config_internal
