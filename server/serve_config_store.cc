// The serve config's `store:` (serve_config.h, examples/serve-ha.yaml):
// `store: {sqlite: PATH}` (what `db: PATH` also says; the default) or
// `store: {postgres: {url: URL, password_file: FILE}}`.

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

constexpr std::string_view kStoreKeys[] = {"sqlite", "postgres"};
constexpr std::string_view kPostgresKeys[] = {"url", "password_file"};

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
  return {};
}

}  // namespace tessera::server::serve_config_internal
