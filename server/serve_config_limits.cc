// The serve config's `limits:` section (serve_config.h, examples/serve.yaml).

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string_view>
#include <tuple>
#include <utility>

#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

constexpr std::string_view kLimitKeys[] = {"max_body_bytes",
                                           "max_queued_per_user",
                                           "header_timeout_s",
                                           "body_timeout_s",
                                           "max_connections_per_client",
                                           "max_connections",
                                           "max_model_bytes",
                                           "max_upload_bytes"};

}  // namespace

Status ConfigParser::ParseLimits(const Field& f, ServeConfig* config) const {
  Result<Fields> fields = MapFields(f.value, "limits", kLimitKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  if (const Field* body = Find(*fields, "max_body_bytes")) {
    Result<int64_t> bytes = Bytes(*body, "limits");
    TESSERA_RETURN_IF_ERROR(bytes);
    config->max_body_bytes = *bytes;
  }
  if (const Field* queued = Find(*fields, "max_queued_per_user")) {
    Result<int64_t> n = Int(*queued, "limits", 1, int64_t{1} << 40);
    TESSERA_RETURN_IF_ERROR(n);
    config->service.max_queued_per_user = *n;
  }
  for (auto [key, target] :
       {std::pair{"max_model_bytes", &config->service.max_model_bytes},
        std::pair{"max_upload_bytes", &config->service.max_upload_bytes}}) {
    if (const Field* size = Find(*fields, key)) {
      Result<int64_t> bytes = Bytes(*size, "limits");
      TESSERA_RETURN_IF_ERROR(bytes);
      *target = *bytes;
    }
  }
  // The transport's bounds on connections (http/transport.h).
  for (auto [key, target, max] :
       {std::tuple{"header_timeout_s", &config->header_timeout_s, 3600},
        std::tuple{"body_timeout_s", &config->body_timeout_s, 3600},
        std::tuple{"max_connections_per_client",
                   &config->max_connections_per_client, 1000000},
        std::tuple{"max_connections", &config->max_connections, 1000000}}) {
    if (const Field* field = Find(*fields, key)) {
      Result<int64_t> n = Int(*field, "limits", 1, max);
      TESSERA_RETURN_IF_ERROR(n);
      *target = static_cast<int>(*n);
    }
  }
  return {};
}

}  // namespace tessera::server::serve_config_internal
