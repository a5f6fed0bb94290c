// ParseServeConfig (tessera serve --config: pools, nodes, users, launcher,
// Kubernetes) on any text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/serve_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tessera::server::ParseServeConfig(text, "fuzz.yaml");
  return 0;
}
