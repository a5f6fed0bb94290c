// The names of a job's state and of an elastic job's mode (the words the
// API, the store and the CLI use), and the form of an upload's id.

#include "scheduler/job.h"

#include <algorithm>
#include <array>
#include <utility>

namespace tessera::scheduler {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 8> kNames = {{
    {JobState::kQueued, "queued"},
    {JobState::kRunning, "running"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kPreempted, "preempted"},
    {JobState::kStarting, "starting"},
    {JobState::kOom, "oom"},
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
         s == JobState::kCancelled || s == JobState::kOom;
}

std::string_view ElasticModeName(ElasticMode m) {
  return m == ElasticMode::kPerWorker ? "per-worker" : "one-process";
}

std::optional<ElasticMode> ParseElasticMode(std::string_view text) {
  if (text == "one-process") return ElasticMode::kOneProcess;
  if (text == "per-worker") return ElasticMode::kPerWorker;
  return std::nullopt;
}

bool IsUploadId(std::string_view id) {
  return id.size() == 64 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace tessera::scheduler
