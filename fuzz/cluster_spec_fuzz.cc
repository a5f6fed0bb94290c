// ParseCluster (tessera plan --cluster) on any text, with the built-in
// device catalog.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "estimator/device_catalog.h"
#include "placer/core/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto* const catalog = new tessera::estimator::DeviceCatalog(
      tessera::estimator::DeviceCatalog::BuiltIn());
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tessera::placer::ParseCluster(text, "fuzz.yaml", *catalog, {});
  return 0;
}
