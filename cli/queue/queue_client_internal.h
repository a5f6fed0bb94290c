#ifndef TESSERA_CLI_QUEUE_QUEUE_CLIENT_INTERNAL_H_
#define TESSERA_CLI_QUEUE_QUEUE_CLIENT_INTERNAL_H_

// What the queue's client commands (queue_commands.cc, submit.cc) share:
// the client, reading the service's JSON, printing it, and running a
// command the house way.

#include <cstdint>
#include <exception>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "cli/queue/queue_commands.h"
#include "client/queue_client.h"
#include "common/result.h"

namespace tessera::cli {

inline client::QueueClient Client(const ClientArgs& args) {
  return client::QueueClient(args.url, args.token);
}

// A field of the service's JSON as text ("" when absent or null) or as an
// integer (0 when absent or not a number).
inline std::string Str(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

inline int64_t Int(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<int64_t>() : 0;
}

inline void PrintJson(const nlohmann::json& j) {
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
}

// Runs `body`, reporting its error (and any exception) the house way.
template <typename Body>
int Run(Body body) {
  try {
    const Status status = body();
    return status ? 0 : ReportError(status.error());
  } catch (const std::exception& e) {
    return ReportError(
        Internal(std::string("unexpected failure: ") + e.what()));
  }
}

}  // namespace tessera::cli

#endif  // TESSERA_CLI_QUEUE_QUEUE_CLIENT_INTERNAL_H_
