#ifndef TESSERA_LAUNCH_OUT_OF_MEMORY_H_
#define TESSERA_LAUNCH_OUT_OF_MEMORY_H_

// Whether a job ended for lack of GPU memory, read from what it wrote last
// to stderr (issue 31: such a job ends `oom`, not as a plain failure).
//
// A line counts only where a framework or the CUDA runtime raised or
// printed an error for a failed GPU allocation:
//   PyTorch    "torch.OutOfMemoryError: CUDA out of memory. Tried to
//              allocate 4.00 GiB. ..." (also torch.cuda.OutOfMemoryError,
//              and RuntimeError before PyTorch 2.0), "...Error: CUDA
//              error: out of memory";
//   CUDA       cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY;
//   cuBLAS     CUBLAS_STATUS_ALLOC_FAILED; cuDNN CUDNN_STATUS_ALLOC_FAILED;
//   NCCL       "Cuda failure 'out of memory'";
//   TensorFlow "ResourceExhaustedError: ... OOM when allocating tensor";
//   JAX/XLA    "RESOURCE_EXHAUSTED: Out of memory while trying to allocate
//              N bytes".
// A line that only mentions the words does not: prose ("reducing the
// batch to avoid CUDA out of memory"), a warning, source code quoted in a
// traceback (`raise RuntimeError("CUDA out of memory")`, `except
// torch.OutOfMemoryError:`), and host memory errors (MemoryError,
// std::bad_alloc, "Cannot allocate memory", the OOM killer's "Killed").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::launch {

struct OutOfMemory {
  // Who reported it: "pytorch", "cuda", "cublas", "cudnn", "nccl",
  // "tensorflow" or "jax".
  std::string source;
  std::string line;  // the error line, trimmed to at most 300 characters
  // What the failed allocation asked for, when the message says.
  std::optional<int64_t> tried_mib;
};

// The last out-of-memory error among `stderr_tail`'s lines, or nullopt.
std::optional<OutOfMemory> FindOutOfMemory(std::string_view stderr_tail);

// FindOutOfMemory over the last kOomTailBytes of the file at `path` (a
// job's stderr log); nullopt too when it cannot be read.
inline constexpr size_t kOomTailBytes = size_t{64} << 10;
std::optional<OutOfMemory> FindOutOfMemoryInFile(const std::string& path);

}  // namespace tessera::launch

#endif  // TESSERA_LAUNCH_OUT_OF_MEMORY_H_
