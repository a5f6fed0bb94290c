#ifndef TESSERA_CONSOLE_ASSETS_INTERNAL_H_
#define TESSERA_CONSOLE_ASSETS_INTERNAL_H_

// The files of console/web/ as console/embed.cmake compiles them in.

#include <cstddef>
#include <vector>

namespace tessera::console::internal {

struct EmbeddedFile {
  const char* name;  // "index.html"
  const unsigned char* bytes;
  size_t size;
};

const std::vector<EmbeddedFile>& Files();

}  // namespace tessera::console::internal

#endif  // TESSERA_CONSOLE_ASSETS_INTERNAL_H_
