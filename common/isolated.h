#ifndef TESSERA_COMMON_ISOLATED_H_
#define TESSERA_COMMON_ISOLATED_H_

// Work that third-party code could crash, run where a crash cannot take
// tessera down: a forked child process with a deadline and a memory cap.
// ONNX's shape inference (graph/), CBC's and GLPK's solves (placer/, sim/)
// run this way; docs/design.md, "Third-party code runs in a child".
//
// The child is a fork of the caller: it sees the caller's memory as it was
// (a model built in the parent is solved in the child), runs `work`, writes
// the bytes it returns to a pipe and exits without running destructors or
// atexit handlers. A crash, an abort, an uncaught exception, a memory cap
// hit or a deadline passed in the child is an Error for the caller; the
// caller's own state is never touched by the child.
//
// Thread safety: safe to call from any thread, several at once. The child
// of a multi-threaded caller holds only the calling thread, so `work` must
// not take a lock another thread of the caller may hold (glibc's malloc is
// safe: fork resets it); it must not start threads. AddressSanitizer's
// allocator (GCC 12's) is not reset: a child forked while another thread
// allocates can hang on its lock until the deadline, so callers that run
// many threads of their own fork after joining them (sim/replay.cc) or
// before starting them (sim/model_workload.cc), and m-SCT's LP, which runs
// beside the list scheduler's thread and is forked when it cannot be
// spawned (RunSpawned, below), waits in such a build until that thread
// allocates no more (placer/baechi/m_sct.cc). A spawned child has none of
// these hazards: nothing runs between its start and its exec.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/sanitizers.h"

namespace tessera {

// Whether this build's allocator can hang a child forked while another
// thread allocates (AddressSanitizer's, above): callers that fork beside a
// thread of their own wait, in such a build only, until that thread has
// stopped allocating (placer/baechi/m_sct.cc).
inline constexpr bool kForkWaitsForQuietThreads = kAddressSanitizer;

struct IsolationLimits {
  // Wall-clock seconds the child may run; past them it is killed (SIGKILL).
  // <= 0: no deadline.
  double deadline_s = 0.0;
  // Bytes of address space the child may add to what it inherited from the
  // caller (RLIMIT_AS over the fork's size, so that a sanitizer's reserved
  // shadow does not count); an allocation past it fails in the child.
  // <= 0: no cap.
  int64_t memory_bytes = 0;
};

// Runs `work` in a forked child and returns the bytes it produced. `what`
// names the work in error messages ("CBC's MIP solve"): "<what> crashed
// (Segmentation fault)", "<what> ran past its deadline of 2.5 s and was
// killed", "<what> ran out of memory (cap 4096 MiB)". Errors are kInternal.
// When no child can be made (fork or pipe fails: a process limit), `work`
// runs in the caller with a note in `*fallback_note` when it is non-null.
Result<std::string> RunIsolated(const std::function<std::string()>& work,
                                const IsolationLimits& limits,
                                const std::string& what,
                                std::string* fallback_note = nullptr);

// Work run in a fresh start of this program rather than a fork of it.
// A fork of a large process copies its page tables and write-protects its
// pages: while the child lives, every page the caller's threads write is
// copied, and every first write after it faults (on m-SCT's LP beside the
// list scheduler at 10^6 ops, 33,000 faults and ~400 ms of its 1.1 s;
// docs/placer_baechi.md). A spawned child shares no page with the caller:
// its input goes to it as bytes, its answer comes back as bytes, under
// the same limits and with the same errors as RunIsolated's.
//
// The child is /proc/self/exe started again with arguments that name a
// SpawnEntry; the entry is registered by TESSERA_SPAWN_ENTRY before any
// static object of the program is built, and the child runs it then, so
// that neither the program's main nor its static objects run in it. Its
// standard input is /dev/null and its standard output goes to the caller's
// standard error (a library's message cannot corrupt tessera's --json).
struct SpawnEntry {
  const char* name;  // unique in the program
  std::string (*run)(const std::string& input);
};

// Makes `entry` runnable in a spawned child: call it from
// TESSERA_SPAWN_ENTRY, at namespace scope of the file defining the entry.
void RegisterSpawnEntry(const SpawnEntry* entry);

// A constructor of priority 201: it runs before the program's static
// objects and before the child serves its entry (priority 202).
#define TESSERA_SPAWN_ENTRY(entry)                                   \
  __attribute__((constructor(201))) static void Register_##entry() { \
    ::tessera::RegisterSpawnEntry(&(entry));                         \
  }

// Runs entry.run(input) in a spawned child and returns its bytes; errors
// as RunIsolated's. When the program cannot be started again (no
// /proc/self/exe, a process limit) or does not know the entry (tessera
// built into a shared library another program loaded), the entry runs in
// a fork (RunIsolated), with a note in `*fallback_note` when non-null.
Result<std::string> RunSpawned(const SpawnEntry& entry,
                               const std::string& input,
                               const IsolationLimits& limits,
                               const std::string& what,
                               std::string* fallback_note = nullptr);

// Appends and reads back plain values of the child's answer (native byte
// order: parent and child are the same binary).
class ByteWriter {
 public:
  template <typename T>
  void Put(const T& v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  // The count, then the values (GetArray, GetDoubles read them back).
  template <typename T>
  void PutValues(const T* v, size_t n) {
    Put(static_cast<uint64_t>(n));
    if (n > 0) {  // an empty vector's data() may be null
      bytes_.append(reinterpret_cast<const char*>(v), n * sizeof(T));
    }
  }
  template <typename T>
  void PutArray(const std::vector<T>& v) {
    PutValues(v.data(), v.size());
  }
  void PutDoubles(const double* v, size_t n) { PutValues(v, n); }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& bytes) : bytes_(bytes) {}
  // False once a read ran past the end (every later read fails too).
  template <typename T>
  bool Get(T* v) {
    if (!ok_ || bytes_.size() - pos_ < sizeof *v) return ok_ = false;
    std::copy_n(bytes_.data() + pos_, sizeof *v, reinterpret_cast<char*>(v));
    pos_ += sizeof *v;
    return true;
  }
  // What PutValues wrote: false (and nothing allocated) when the count is
  // more than the bytes left hold, or is not `expected` when that is given.
  template <typename T>
  bool GetArray(std::vector<T>* out, uint64_t expected = kAnyCount) {
    uint64_t n = 0;
    if (!Get(&n) || (expected != kAnyCount && n != expected) ||
        (bytes_.size() - pos_) / sizeof(T) < n) {
      return ok_ = false;
    }
    out->resize(n);
    if (n > 0) {
      std::copy_n(bytes_.data() + pos_, n * sizeof(T),
                  reinterpret_cast<char*>(out->data()));
    }
    pos_ += n * sizeof(T);
    return true;
  }
  bool GetDoubles(size_t n, std::vector<double>* out) {
    return GetArray(out, n);
  }
  bool at_end() const { return ok_ && pos_ == bytes_.size(); }

 private:
  static constexpr uint64_t kAnyCount = ~uint64_t{0};
  const std::string& bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace tessera

#endif  // TESSERA_COMMON_ISOLATED_H_
