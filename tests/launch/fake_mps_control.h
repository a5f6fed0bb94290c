#ifndef TESSERA_TESTS_LAUNCH_FAKE_MPS_CONTROL_H_
#define TESSERA_TESTS_LAUNCH_FAKE_MPS_CONTROL_H_

// A fake nvidia-cuda-mps-control (a shell script) for the tests of
// launch/mps_daemon.h and of the local launcher's MPS clients. The daemon
// "runs" while the file `running` is in its pipe directory
// ($CUDA_MPS_PIPE_DIRECTORY): `-d` writes it (with the GPU it was given,
// $CUDA_VISIBLE_DEVICES) unless silent, and logs "start" to
// $CUDA_MPS_LOG_DIRECTORY/control.log; "get_server_list" on stdin
// succeeds while it runs; "quit" removes it. Removing `running` is the
// daemon dying. Every call, whatever it is, is also logged to
// FakeMpsCalls(path) ("-d", or the command read from stdin).

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

namespace tessera::launch::testing {

enum class FakeMps {
  kWorking,
  kSilent,   // `-d` succeeds but the daemon never answers
  kFailing,  // `-d` fails: "An instance of this daemon is already running"
};

// Where the fake at `path` logs its calls.
inline std::string FakeMpsCalls(const std::string& path) {
  return path + ".calls";
}

// Writes the fake control program to `path` (executable); returns `path`.
inline std::string WriteFakeMpsControl(const std::string& path,
                                       FakeMps mode = FakeMps::kWorking) {
  std::ofstream f(path);
  f << "#!/bin/sh\n"
       "calls='"
    << FakeMpsCalls(path)
    << "'\n"
       "run=\"$CUDA_MPS_PIPE_DIRECTORY/running\"\n"
       "if [ \"$1\" = -d ]; then\n"
       "  echo -d >> \"$calls\"\n"
    << (mode == FakeMps::kFailing
            ? "  echo 'An instance of this daemon is already running' >&2\n"
              "  exit 1\n"
            : "")
    << (mode == FakeMps::kSilent
            ? ""
            : "  echo \"$CUDA_VISIBLE_DEVICES\" > \"$run\"\n")
    << "  echo start >> \"$CUDA_MPS_LOG_DIRECTORY/control.log\"\n"
       "  exit 0\n"
       "fi\n"
       "read cmd\n"
       "echo \"$cmd\" >> \"$calls\"\n"
       "case \"$cmd\" in\n"
       "  get_server_list) [ -f \"$run\" ] && exit 0\n"
       "    echo 'Cannot find MPS control daemon process' >&2; exit 1;;\n"
       "  quit) rm -f \"$run\"; exit 0;;\n"
       "esac\n"
       "exit 2\n";
  f.close();
  chmod(path.c_str(), 0755);
  return path;
}

// The lines of a text file (none if it does not exist).
inline std::vector<std::string> FileLines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

// How many times the daemon was started, by its control.log.
inline int FakeMpsStarts(const std::string& control_log) {
  int n = 0;
  for (const std::string& line : FileLines(control_log)) n += line == "start";
  return n;
}

}  // namespace tessera::launch::testing

#endif  // TESSERA_TESTS_LAUNCH_FAKE_MPS_CONTROL_H_
