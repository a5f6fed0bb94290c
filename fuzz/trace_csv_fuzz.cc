// The openb trace's CSV files (tessera simulate --nodes/--pods): the input
// as a node list and as a pod list, lenient and strict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::sim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool strict : {false, true}) {
    (void)ParseTraceNodes(text, "fuzz_node_list.csv", {.strict = strict});
    (void)ParseTracePods(text, "fuzz_pod_list.csv", {.strict = strict});
  }
  return 0;
}
