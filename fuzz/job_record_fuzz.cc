// ParseJobRecord on any JSON (the store's records, read back after a
// restart); a record it accepts must survive JobRecordJson and parse again
// to the same JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "service/wire/job_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr,
                                                 /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto job = tessera::service::ParseJobRecord(j);
  if (!job) return 0;
  const nlohmann::json again = tessera::service::JobRecordJson(*job);
  auto job2 = tessera::service::ParseJobRecord(again);
  if (!job2 || tessera::service::JobRecordJson(*job2) != again) std::abort();
  return 0;
}
