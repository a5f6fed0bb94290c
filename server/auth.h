#ifndef TESSERA_SERVER_AUTH_H_
#define TESSERA_SERVER_AUTH_H_

// Bearer tokens: the configuration stores each user's token as its SHA-256,
// so a leaked configuration file does not leak the tokens. Stateless and
// thread-safe.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/serve_config.h"

namespace tessera::server {

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

// The user whose token is the one in `authorization` ("Bearer TOKEN", the
// HTTP header's value), or nullopt for a missing, malformed or unknown
// token. Hashes are compared in constant time, and every user is checked,
// so the time taken does not say how close a guess was.
std::optional<UserEntry> Authenticate(const std::vector<UserEntry>& users,
                                      std::string_view authorization);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_AUTH_H_
