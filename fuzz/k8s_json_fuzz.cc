// The Kubernetes extender's request bodies (ExtenderArgs for filter and
// prioritize, ExtenderBindingArgs for bind and release) and a v1 Pod as
// the API server returns it, all on the same JSON, read as the extender
// reads a body (no deeper than kMaxJsonDepth).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "k8s/k8s_extender.h"
#include "k8s/k8s_pod.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::k8s;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (tessera::JsonDepth(text, tessera::kMaxJsonDepth) >
      tessera::kMaxJsonDepth) {
    return 0;
  }
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr,
                                                 /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  (void)ParseExtenderArgs(j);
  (void)ParseBindingArgs(j, /*node_required=*/true);
  (void)ParseBindingArgs(j, /*node_required=*/false);
  (void)ParseK8sPod(j, "Pod");
  return 0;
}
