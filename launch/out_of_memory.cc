// FindOutOfMemory (out_of_memory.h): each line of the tail against the
// errors GPU frameworks raise when an allocation fails.
#include "launch/out_of_memory.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "common/strings.h"

namespace tessera::launch {
namespace {

constexpr size_t kMaxLine = 300;

bool Contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// The message after a raised error's type at the start of `line`
// ("torch.OutOfMemoryError: CUDA out of memory..." gives "CUDA out of
// memory..."), or nullopt when the line does not start with one: a
// dotted name of word characters ending in "Error" or "Exception", then
// ": ".
std::optional<std::string_view> RaisedMessage(std::string_view line) {
  size_t i = 0;
  while (i < line.size() &&
         (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' ||
          line[i] == '.')) {
    ++i;
  }
  const std::string_view type = line.substr(0, i);
  if (!(type.ends_with("Error") || type.ends_with("Exception"))) {
    return std::nullopt;
  }
  if (line.substr(i, 2) != ": ") return std::nullopt;
  return line.substr(i + 2);
}

// "Tried to allocate 4.00 GiB" / "allocate 4294967296 bytes": MiB.
std::optional<int64_t> TriedMib(std::string_view line) {
  for (const std::string_view lead :
       {std::string_view("Tried to allocate "),
        std::string_view("trying to allocate ")}) {
    const size_t at = line.find(lead);
    if (at == std::string_view::npos) continue;
    const std::string rest(line.substr(at + lead.size(), 40));
    char* end = nullptr;
    const double v = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str() || v < 0) return std::nullopt;
    const std::string_view unit = Trim(std::string_view(end));
    struct Unit {
      std::string_view name;
      double mib;
    };
    constexpr std::array<Unit, 5> kUnits = {{{"GiB", 1024.0},
                                             {"MiB", 1.0},
                                             {"KiB", 1.0 / 1024},
                                             {"bytes", 1.0 / (1 << 20)},
                                             {"B", 1.0 / (1 << 20)}}};
    for (const Unit& u : kUnits) {
      if (unit.starts_with(u.name)) {
        return static_cast<int64_t>(v * u.mib + 0.5);
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// Who reported `line` as a failed GPU allocation, or "" when it is not one.
std::string_view SourceOf(std::string_view line) {
  // Error codes: names nobody writes in prose.
  if (Contains(line, "cudaErrorMemoryAllocation") ||
      Contains(line, "CUDA_ERROR_OUT_OF_MEMORY")) {
    return "cuda";
  }
  if (Contains(line, "CUBLAS_STATUS_ALLOC_FAILED")) return "cublas";
  if (Contains(line, "CUDNN_STATUS_ALLOC_FAILED")) return "cudnn";
  if (Contains(line, "NCCL") &&
      Contains(line, "Cuda failure 'out of memory'")) {
    return "nccl";
  }
  const std::optional<std::string_view> message = RaisedMessage(line);
  if (!message) return "";
  if (message->starts_with("CUDA out of memory")) return "pytorch";
  if (message->starts_with("CUDA error: out of memory")) return "cuda";
  if (line.starts_with("tensorflow.") || Contains(line, "ResourceExhausted")) {
    if (Contains(*message, "OOM when allocating")) return "tensorflow";
  }
  if (Contains(*message, "RESOURCE_EXHAUSTED: Out of memory")) return "jax";
  return "";
}

}  // namespace

std::optional<OutOfMemory> FindOutOfMemory(std::string_view stderr_tail) {
  std::optional<OutOfMemory> last;
  size_t at = 0;
  while (at <= stderr_tail.size()) {
    size_t end = stderr_tail.find('\n', at);
    if (end == std::string_view::npos) end = stderr_tail.size();
    const std::string_view line = Trim(stderr_tail.substr(at, end - at));
    at = end + 1;
    if (line.empty()) continue;
    const std::string_view source = SourceOf(line);
    if (source.empty()) continue;
    last = OutOfMemory{std::string(source),
                       std::string(line.substr(0, kMaxLine)), TriedMib(line)};
  }
  return last;
}

std::optional<OutOfMemory> FindOutOfMemoryInFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return std::nullopt;
  const std::streamoff size = f.tellg();
  const std::streamoff from = std::max<std::streamoff>(
      0, size - static_cast<std::streamoff>(kOomTailBytes));
  f.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  f.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(f.gcount()));
  // A cut first line is no line.
  if (from > 0) {
    const size_t nl = tail.find('\n');
    tail.erase(0, nl == std::string::npos ? tail.size() : nl + 1);
  }
  return FindOutOfMemory(tail);
}

}  // namespace tessera::launch
