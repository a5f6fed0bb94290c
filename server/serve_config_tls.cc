// The serve config's `tls:` section (serve_config.h, examples/serve.yaml).

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <utility>

#include "http/transport.h"
#include "server/serve_config_internal.h"

namespace tessera::server::serve_config_internal {
namespace {

constexpr std::string_view kTlsKeys[] = {"cert_file", "key_file",
                                         "client_ca_file"};

}  // namespace

// `tls:` PEM files for HTTPS; client_ca_file verifies client certificates.
Status ConfigParser::ParseTls(const Field& f, ServeConfig* config) const {
  Result<Fields> fields = MapFields(f.value, "tls", kTlsKeys);
  TESSERA_RETURN_IF_ERROR(fields);
  http::TlsOptions& tls = config->tls;
  for (auto [key, target] :
       {std::pair{"cert_file", &tls.cert_file},
        std::pair{"key_file", &tls.key_file},
        std::pair{"client_ca_file", &tls.client_ca_file}}) {
    if (const Field* file = Find(*fields, key)) {
      Result<std::string> text = Text(*file, "tls");
      TESSERA_RETURN_IF_ERROR(text);
      *target = *text;
    }
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return BadInput(At(f.value) +
                    "tls: needs both 'cert_file' and 'key_file' (PEM)");
  }
  return {};
}

}  // namespace tessera::server::serve_config_internal
