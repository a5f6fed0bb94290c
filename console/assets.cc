#include "console/assets.h"

#include <string>

#include "common/strings.h"
#include "console/assets_internal.h"

namespace tessera::console {
namespace {

std::string_view ContentType(std::string_view name) {
  auto ends = [&](std::string_view suffix) {
    return name.size() >= suffix.size() &&
           name.substr(name.size() - suffix.size()) == suffix;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

struct Table {
  std::vector<std::string> etags;
  std::vector<Asset> assets;
};

const Table& TheTable() {
  static const Table table = [] {
    Table t;
    const auto& files = internal::Files();
    t.etags.reserve(files.size());  // the views below point into these
    for (const internal::EmbeddedFile& f : files) {
      const std::string_view body(reinterpret_cast<const char*>(f.bytes),
                                  f.size);
      t.etags.push_back(EntityTag(body));
      t.assets.push_back({f.name, ContentType(f.name), body, t.etags.back()});
    }
    return t;
  }();
  return table;
}

}  // namespace

const std::vector<Asset>& Assets() { return TheTable().assets; }

const Asset* FindAsset(std::string_view name) {
  for (const Asset& a : Assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace tessera::console
