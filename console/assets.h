#ifndef TESSERA_CONSOLE_ASSETS_H_
#define TESSERA_CONSOLE_ASSETS_H_

// The web console (docs/console.md): its HTML, CSS and JavaScript, compiled
// into the binary from console/web/. The server (server/http_server.h)
// serves them at / and /console/NAME; the pages talk to the same HTTP API
// as the CLI.

#include <string_view>
#include <vector>

namespace tessera::console {

struct Asset {
  std::string_view name;          // "console.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view body;
  std::string_view etag;  // a quoted hash of the body, for If-None-Match
};

// Every file, sorted by name.
const std::vector<Asset>& Assets();
// The file called `name` (no directories), or nullptr.
const Asset* FindAsset(std::string_view name);

}  // namespace tessera::console

#endif  // TESSERA_CONSOLE_ASSETS_H_
