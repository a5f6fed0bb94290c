// JobState names: the words the API, the store and the CLI use.

#include "scheduler/job.h"

#include <array>
#include <utility>

namespace tessera::scheduler {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 7> kNames = {{
    {JobState::kQueued, "queued"},
    {JobState::kRunning, "running"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kPreempted, "preempted"},
    {JobState::kStarting, "starting"},
}};

}  // namespace

std::string_view JobStateName(JobState s) {
  for (const auto& [state, name] : kNames) {
    if (state == s) return name;
  }
  return "unknown";  // only for a value cast from outside the enum
}

std::optional<JobState> ParseJobState(std::string_view text) {
  for (const auto& [state, name] : kNames) {
    if (name == text) return state;
  }
  return std::nullopt;
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed ||
         s == JobState::kCancelled;
}

}  // namespace tessera::scheduler
