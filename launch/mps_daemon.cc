// MpsDaemon (mps_daemon.h) over its control program.
#include "launch/mps_daemon.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "launch/subprocess.h"

namespace tessera::launch {

MpsDaemon::MpsDaemon(MpsOptions options) : options_(std::move(options)) {}

std::map<std::string, std::string> MpsDaemon::ClientEnv() const {
  return {{"CUDA_MPS_PIPE_DIRECTORY", options_.dir + "/pipe"},
          {"CUDA_MPS_LOG_DIRECTORY", options_.dir + "/log"}};
}

std::string MpsDaemon::What() const {
  return "the MPS control daemon" +
         (options_.gpu.empty() ? std::string() : " for GPU " + options_.gpu) +
         " (" + options_.dir + ")";
}

std::map<std::string, std::string> MpsDaemon::Env() const {
  std::map<std::string, std::string> env = ClientEnv();
  if (!options_.gpu.empty()) env["CUDA_VISIBLE_DEVICES"] = options_.gpu;
  return env;
}

bool MpsDaemon::Alive() const {
  return RunCommand({options_.control}, Env(), options_.timeout_s,
                    "get_server_list\n")
      .ok();
}

Status MpsDaemon::Ensure() {
  if (Alive()) {
    started_ = true;
    return {};
  }
  const std::string what = What();
  std::error_code ec;
  for (const char* sub : {"/pipe", "/log"}) {
    std::filesystem::create_directories(options_.dir + sub, ec);
    if (ec) {
      return Unavailable(what + ": cannot make " + options_.dir + sub + ": " +
                         ec.message());
    }
  }
  const CommandResult start =
      RunCommand({options_.control, "-d"}, Env(), options_.timeout_s);
  if (!start.ok()) {
    return Unavailable(what + ": '" + options_.control +
                       " -d' failed: " + start.Summary());
  }
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options_.timeout_s));
  while (!Alive()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Unavailable(what + ": started, but it did not answer within " +
                         std::to_string(static_cast<int>(options_.timeout_s)) +
                         " s (its log: " + options_.dir + "/log)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (started_) ++restarts_;
  started_ = true;
  return {};
}

Status MpsDaemon::Stop() {
  if (!Alive()) return {};
  const CommandResult quit =
      RunCommand({options_.control}, Env(), options_.timeout_s, "quit\n");
  if (!quit.ok()) {
    return Unavailable(What() + ": 'quit' failed: " + quit.Summary());
  }
  return {};
}

}  // namespace tessera::launch
