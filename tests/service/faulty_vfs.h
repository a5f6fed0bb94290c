#ifndef TESSERA_TESTS_SERVICE_FAULTY_VFS_H_
#define TESSERA_TESTS_SERVICE_FAULTY_VFS_H_

// An SQLite VFS shim for fault injection: it wraps the default VFS and,
// while armed, fails the writes, syncs and truncations of every file SQLite
// opens through it (the database, its WAL, its shared memory index is left
// alone) with the error chosen: SQLITE_IOERR_WRITE (an I/O error) or
// SQLITE_FULL (the disk is full). Install() makes it the default VFS of the
// process, so the code under test opens its databases through it unchanged.

#include <atomic>

namespace tessera::testing {

class FaultyVfs {
 public:
  enum class Fault { kNone, kIoError, kDiskFull };
  // Registers the shim as the default VFS (once per process).
  static void Install();
  // From now on, after `pass` more writes succeed, every write fails with
  // `fault` until Disarm() (kNone: nothing fails).
  static void Arm(Fault fault, int pass = 0);
  static void Disarm() { Arm(Fault::kNone); }
  // Writes, syncs and truncations failed since Install.
  static int failures();
};

// Disarms when it leaves scope, so that a failing test leaves the VFS
// working for the next.
class FaultScope {
 public:
  explicit FaultScope(FaultyVfs::Fault fault, int pass = 0) {
    FaultyVfs::Arm(fault, pass);
  }
  ~FaultScope() { FaultyVfs::Disarm(); }
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_SERVICE_FAULTY_VFS_H_
