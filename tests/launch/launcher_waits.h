#ifndef TESSERA_TESTS_LAUNCH_LAUNCHER_WAITS_H_
#define TESSERA_TESTS_LAUNCH_LAUNCHER_WAITS_H_

// Waiting on a launcher in tests: for a job's exit, for a condition; both
// give up after kPatience (a loaded machine is slow, not stuck).

#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "launch/launcher.h"

namespace tessera::launch::waits {

using Clock = std::chrono::steady_clock;

constexpr auto kPatience = std::chrono::seconds(10);

// Polls `launcher` until job `id` has exited, or gives up after kPatience.
inline std::optional<Exited> WaitForExit(Launcher& launcher, JobId id) {
  const auto deadline = Clock::now() + kPatience;
  while (Clock::now() < deadline) {
    for (const Exited& e : launcher.Poll()) {
      if (e.id == id) return e;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

// Waits until `done` holds, up to kPatience.
inline bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = Clock::now() + kPatience;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace tessera::launch::waits

#endif  // TESSERA_TESTS_LAUNCH_LAUNCHER_WAITS_H_
