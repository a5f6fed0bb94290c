// The fault-injecting VFS (faulty_vfs.h): each file opened through it is
// the real file behind a method table that forwards every call, except
// that xWrite, xSync and xTruncate fail while a fault is armed.
#include "tests/service/faulty_vfs.h"

#include <sqlite3.h>

#include <atomic>
#include <mutex>

namespace tessera::testing {
namespace {

std::atomic<int> g_fault{0};  // FaultyVfs::Fault
std::atomic<int> g_pass{0};   // writes still allowed before the fault
std::atomic<int> g_failures{0};
sqlite3_vfs* g_real = nullptr;
sqlite3_vfs g_vfs;

struct File {
  sqlite3_file base;   // pMethods: kMethods
  sqlite3_file* real;  // the real file, right after this struct
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }

// The error for this write, or SQLITE_OK.
int Injected(int io_error) {
  const int fault = g_fault.load();
  if (fault == 0) return SQLITE_OK;
  if (g_pass.fetch_sub(1) > 0) return SQLITE_OK;
  g_failures++;
  return fault == static_cast<int>(FaultyVfs::Fault::kDiskFull) ? SQLITE_FULL
                                                                : io_error;
}

int Close(sqlite3_file* f) {
  sqlite3_file* r = Real(f);
  const int rc = r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
  f->pMethods = nullptr;
  return rc;
}
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  if (int rc = Injected(SQLITE_IOERR_WRITE); rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = Injected(SQLITE_IOERR_TRUNCATE); rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  if (int rc = Injected(SQLITE_IOERR_FSYNC); rc != SQLITE_OK) return rc;
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) {
  return Real(f)->pMethods->xLock(Real(f), level);
}
int Unlock(sqlite3_file* f, int level) {
  return Real(f)->pMethods->xUnlock(Real(f), level);
}
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) {
  return Real(f)->pMethods->xSectorSize(Real(f));
}
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int page, int size, int extend,
           void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int remove) {
  return Real(f)->pMethods->xShmUnmap(Real(f), remove);
}
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  return Real(f)->pMethods->xFetch(Real(f), off, n, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

const sqlite3_io_methods kMethods = {
    3,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    Fetch,
    Unfetch,
};

int Open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags,
         int* out_flags) {
  File* file = reinterpret_cast<File*>(f);
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  const int rc = g_real->xOpen(g_real, name, file->real, flags, out_flags);
  // SQLite calls xClose only if pMethods is set, even after a failed open.
  f->pMethods = file->real->pMethods ? &kMethods : nullptr;
  return rc;
}

}  // namespace

void FaultyVfs::Install() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_real = sqlite3_vfs_find(nullptr);
    g_vfs = *g_real;
    g_vfs.zName = "tessera-faulty";
    g_vfs.szOsFile = static_cast<int>(sizeof(File)) + g_real->szOsFile;
    g_vfs.xOpen = Open;
    g_vfs.pNext = nullptr;
    sqlite3_vfs_register(&g_vfs, /*makeDflt=*/1);
  });
}

void FaultyVfs::Arm(Fault fault, int pass) {
  g_pass = pass;
  g_fault = static_cast<int>(fault);
}

int FaultyVfs::failures() { return g_failures.load(); }

}  // namespace tessera::testing
