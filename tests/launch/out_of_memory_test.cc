// FindOutOfMemory (launch/out_of_memory.h): the errors GPU frameworks
// raise when an allocation fails are found, with what was asked; lines
// that only look similar are not.
#include "launch/out_of_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tessera::launch {
namespace {

using ::testing::HasSubstr;

// A PyTorch 2.4+ traceback's tail. The message is the one measured under
// an MPS memory cap on an H100 (docs/operations.md, "Isolation").
constexpr char kPytorch2[] = R"(Traceback (most recent call last):
  File "/work/train.py", line 41, in <module>
    x = torch.empty(int(4 * 2**30), dtype=torch.uint8, device="cuda")
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.50 GiB is free. Process 490 has 66.00 MiB memory in use.
)";

TEST(FindOutOfMemory, PytorchTwo) {
  const auto oom = FindOutOfMemory(kPytorch2);
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->source, "pytorch");
  EXPECT_EQ(oom->tried_mib, 4096);
  EXPECT_THAT(oom->line, HasSubstr("torch.OutOfMemoryError: CUDA out"));
  EXPECT_LE(oom->line.size(), 300u);
}

TEST(FindOutOfMemory, OlderPytorchAndTheCudaRuntime) {
  // PyTorch 1.13 (RuntimeError) and 2.0-2.3 (torch.cuda.OutOfMemoryError).
  auto oom = FindOutOfMemory(
      "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
      "15.78 GiB total capacity; 14.56 GiB already allocated)");
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->source, "pytorch");
  EXPECT_EQ(oom->tried_mib, 20);
  oom = FindOutOfMemory(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
      "512.00 KiB.");
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->tried_mib, 1);  // 0.5 MiB, rounded
  oom = FindOutOfMemory(
      "RuntimeError: CUDA error: out of memory\n"
      "CUDA kernel errors might be asynchronously reported");
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->source, "cuda");
  EXPECT_FALSE(oom->tried_mib);
  oom = FindOutOfMemory(
      "CUDA error at matmul.cu:88 code=2(cudaErrorMemoryAllocation) "
      "\"cudaMalloc(&d, bytes)\"");
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->source, "cuda");
}

TEST(FindOutOfMemory, LibrariesAndOtherFrameworks) {
  struct Case {
    const char* text;
    const char* source;
    std::optional<int64_t> tried_mib;
  };
  for (const Case& c : {
           Case{"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when "
                "calling `cublasCreate(handle)`",
                "cublas", std::nullopt},
           Case{"RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "cudnn",
                std::nullopt},
           Case{"node3:123:456 [0] misc/utils.cc:90 NCCL WARN Cuda failure "
                "'out of memory'",
                "nccl", std::nullopt},
           Case{"tensorflow.python.framework.errors_impl."
                "ResourceExhaustedError: OOM when allocating tensor with "
                "shape[8192,8192] and type float",
                "tensorflow", std::nullopt},
           Case{"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: "
                "Out of memory while trying to allocate 17179869184 bytes.",
                "jax", 16384},
       }) {
    const auto oom = FindOutOfMemory(c.text);
    ASSERT_TRUE(oom) << c.text;
    EXPECT_EQ(oom->source, c.source) << c.text;
    EXPECT_EQ(oom->tried_mib, c.tried_mib) << c.text;
  }
}

// Lines that only look like it: prose, warnings, source code quoted in a
// traceback, host memory, and a job killed by the kernel's OOM killer.
TEST(FindOutOfMemory, OnlyLooksSimilar) {
  for (const char* text : {
           "INFO: reducing the batch to 16 to avoid CUDA out of memory",
           "WARNING: CUDA out of memory last time; retrying with batch 8",
           "    raise RuntimeError(\"CUDA out of memory\")",
           "    except torch.OutOfMemoryError:",
           "print('torch.OutOfMemoryError: CUDA out of memory')",
           "MemoryError: Unable to allocate 32.0 GiB for an array",
           "terminate called after throwing an instance of 'std::bad_alloc'",
           "OSError: [Errno 12] Cannot allocate memory",
           "Killed",
           "ValueError: out of memory is not a valid option",
           "RuntimeError: CUDA error: device-side assert triggered",
           "",
       }) {
    EXPECT_FALSE(FindOutOfMemory(text)) << text;
  }
}

TEST(FindOutOfMemory, TheLastErrorCounts) {
  const std::string text =
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
      "retrying with a smaller batch\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 "
      "GiB.\n"
      "\n";
  const auto oom = FindOutOfMemory(text);
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->tried_mib, 1024);
  // A line longer than 300 characters is cut.
  const auto long_line = FindOutOfMemory(
      "torch.OutOfMemoryError: CUDA out of memory. " + std::string(1000, 'x'));
  ASSERT_TRUE(long_line);
  EXPECT_EQ(long_line->line.size(), 300u);
}

}  // namespace
}  // namespace tessera::launch
