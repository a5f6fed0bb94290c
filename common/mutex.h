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
#define TESSERA_ASSERT_CAPABILITY(x) \
  TESSERA_THREAD_ANNOTATION(assert_capability(x))

namespace tessera {

class TESSERA_CAPABILITY("mutex") Mutex {
 public:
  void Lock() TESSERA_ACQUIRE() { m_.lock(); }
  void Unlock() TESSERA_RELEASE() { m_.unlock(); }
  // For code the analysis cannot follow (a callback called with the lock
  // held): tells it the lock is held. Checks nothing at run time.
  void AssertHeld() const TESSERA_ASSERT_CAPABILITY(this) {}

  // BasicLockable, for std::condition_variable_any (MutexLock's waits).
  void lock() TESSERA_ACQUIRE() { m_.lock(); }
  void unlock() TESSERA_RELEASE() { m_.unlock(); }

 private:
  std::mutex m_;
};

// Holds `mu` for its scope; waits release it meanwhile.
class TESSERA_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TESSERA_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() TESSERA_RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Waits on `cv` until `done()` (called with the lock held) or `deadline`;
  // returns done()'s last value.
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(std::condition_variable_any& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline,
                 Predicate done) {
    return cv.wait_until(mu_, deadline, done);
  }
  // Waits on `cv` until notified (or spuriously woken) or `deadline`;
  // false if the deadline passed.
  template <class Clock, class Duration>
  bool WaitUntil(std::condition_variable_any& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(mu_, deadline) == std::cv_status::no_timeout;
  }
  template <class Rep, class Period, class Predicate>
  bool WaitFor(std::condition_variable_any& cv,
               const std::chrono::duration<Rep, Period>& timeout,
               Predicate done) {
    return cv.wait_for(mu_, timeout, done);
  }
  template <class Predicate>
  void Wait(std::condition_variable_any& cv, Predicate done) {
    cv.wait(mu_, done);
  }

 private:
  Mutex& mu_;
};

}  // namespace tessera

#endif  // TESSERA_COMMON_MUTEX_H_
