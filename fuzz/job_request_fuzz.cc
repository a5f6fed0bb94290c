// ParseJobRequest on any JSON body (POST /v1/jobs); a request it accepts
// must survive JobRequestJson and parse again to the same JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "service/wire/job_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr,
                                                 /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto r = tessera::service::ParseJobRequest(j);
  if (!r) return 0;
  const nlohmann::json again = tessera::service::JobRequestJson(*r);
  auto r2 = tessera::service::ParseJobRequest(again);
  if (!r2 || tessera::service::JobRequestJson(*r2) != again) std::abort();
  return 0;
}
