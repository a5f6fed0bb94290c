#ifndef TESSERA_COMMON_MUTEX_H_
#define TESSERA_COMMON_MUTEX_H_

// A mutex whose lock rules the compiler checks. Members are marked with the
// mutex that guards them (TESSERA_GUARDED_BY) and functions with the ones
// their caller must hold (TESSERA_REQUIRES) or must not (TESSERA_EXCLUDES);
// Clang's thread-safety analysis (-Wthread-safety, on in every Clang build:
// cmake/TesseraOptions.cmake) then rejects a read or write of a guarded
// member, or a call, without the lock. GCC ignores the annotations.
//
// std::mutex cannot be annotated (libstdc++'s is not), hence this thin
// wrapper, as Abseil's absl::Mutex and Chromium's base::Lock do. A wait on
// a condition variable goes through MutexLock, so that the analysis knows
// the lock is held again when the wait returns.

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define TESSERA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TESSERA_THREAD_ANNOTATION(x)
#endif

#define TESSERA_CAPABILITY(x) TESSERA_THREAD_ANNOTATION(capability(x))
#define TESSERA_SCOPED_CAPABILITY TESSERA_THREAD_ANNOTATION(scoped_lockable)
#define TESSERA_GUARDED_BY(x) TESSERA_THREAD_ANNOTATION(guarded_by(x))
#define TESSERA_REQUIRES(...) \
  TESSERA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define TESSERA_EXCLUDES(...) \
  TESSERA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define TESSERA_ACQUIRE(...) \
  TESSERA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TESSERA_RELEASE(...) \
  TESSERA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TESSERA_ACQUIRED_BEFORE(...) \
  TESSERA_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))

namespace tessera {

class TESSERA_CAPABILITY("mutex") Mutex {
 public:
  // BasicLockable, so that std::condition_variable_any can release it
  // during MutexLock's waits.
  void lock() TESSERA_ACQUIRE() { m_.lock(); }
  void unlock() TESSERA_RELEASE() { m_.unlock(); }

 private:
  std::mutex m_;
};

// Holds `mu` for its scope; waits release it meanwhile.
class TESSERA_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TESSERA_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() TESSERA_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Waits on `cv` until notified (or spuriously woken) or `deadline`;
  // false if the deadline passed.
  template <class Clock, class Duration>
  bool WaitUntil(std::condition_variable_any& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(mu_, deadline) == std::cv_status::no_timeout;
  }
  // Waits on `cv` until `done()` (called with the lock held) or `timeout`;
  // returns done()'s last value.
  template <class Rep, class Period, class Predicate>
  bool WaitFor(std::condition_variable_any& cv,
               const std::chrono::duration<Rep, Period>& timeout,
               Predicate done) {
    return cv.wait_for(mu_, timeout, done);
  }

 private:
  Mutex& mu_;
};

}  // namespace tessera

#endif  // TESSERA_COMMON_MUTEX_H_
