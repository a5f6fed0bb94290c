#ifndef TESSERA_COMMON_JSON_DEPTH_H_
#define TESSERA_COMMON_JSON_DEPTH_H_

// How deeply JSON text nests, checked before a body from the network is
// parsed. nlohmann::json parses any depth without recursion, but copying,
// comparing or dumping a value recurses once per level: a body nested
// 500,000 deep (1 MiB of '[') overflows the stack there (docs/fuzzing.md).

#include <string_view>

namespace tessera {

// Go's encoding/json refuses deeper documents (10,000); no Kubernetes
// object, submission or plan comes near this.
inline constexpr int kMaxJsonDepth = 1000;

// The deepest nesting of arrays and objects in `text` (brackets inside
// strings not counted; the text need not be valid JSON), counting no
// further than `stop` + 1.
int JsonDepth(std::string_view text, int stop = kMaxJsonDepth);

}  // namespace tessera

#endif  // TESSERA_COMMON_JSON_DEPTH_H_
