#ifndef TESSERA_TESTS_CLI_CLI_RUNNER_H_
#define TESSERA_TESTS_CLI_CLI_RUNNER_H_

// Runs the built `tessera` binary (TESSERA_BIN) for end-to-end CLI tests,
// capturing exit code, stdout and stderr.

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::testlib {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `tessera ARGS` (ARGS already shell-quoted) with stdout and stderr in
// files of `dir`.
inline RunResult RunTessera(const std::string& args, const TempDir& dir) {
  const std::string out = dir.File("stdout.txt");
  const std::string err = dir.File("stderr.txt");
  const std::string command = std::string("'") + TESSERA_BIN + "' " + args +
                              " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(command.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_CLI_CLI_RUNNER_H_
