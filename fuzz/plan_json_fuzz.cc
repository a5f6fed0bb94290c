// ParsePlan (tessera split --plan plan.json) on any JSON.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "split/split.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr,
                                                 /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  (void)tessera::split::ParsePlan(j, "fuzz.json");
  return 0;
}
