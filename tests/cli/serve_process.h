#ifndef TESSERA_TESTS_CLI_SERVE_PROCESS_H_
#define TESSERA_TESTS_CLI_SERVE_PROCESS_H_

// The real `tessera serve` (TESSERA_BIN) as a child process of an
// end-to-end test, on a loopback port found free, with users whose token
// hashes the test writes into the config. Needs httplib and OpenSSL.

#include <httplib.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "tests/testlib/loopback_socket.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::testlib {

// Lower-case hex SHA-256 of `text` (a config's token_sha256).
inline std::string Sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest, &n, EVP_sha256(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

// `tessera serve --config CONFIG [EXTRA...]`, its stderr appended to a log
// file; it dies with the test process, even if the test crashes.
// The lines a test's serve config starts with: listen on `port`, the
// database and the jobs' logs in `dir`, and a 1 s kill grace.
inline std::string ServeConfigHead(const TempDir& dir, int port) {
  return "listen: 127.0.0.1:" + std::to_string(port) + "\n" +
         "db: " + dir.File("queue.db") + "\n" + "log_dir: " + dir.File("logs") +
         "\n" + "kill_grace_s: 1\n";
}

class ServeProcess {
 public:
  ServeProcess() = default;
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;
  ~ServeProcess() { Stop(SIGTERM); }

  // Starts it and waits until /healthz on `port` answers 200: "" when it
  // is up, else why not, with the log. Fails at once when the process
  // exits; otherwise waits up to 120 s of wall time (a recovery under ASan
  // on a loaded 2-core machine took over 10 s, which was the old count of
  // probes, not a time).
  std::string Start(const std::string& config, int port, const std::string& log,
                    const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {TESSERA_BIN, "serve", "--config", config};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      FILE* f = std::freopen(log.c_str(), "a", stderr);
      (void)f;
      execv(TESSERA_BIN, argv.data());
      _exit(127);
    }
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1);
    c.set_read_timeout(5);
    constexpr int kUpWithinS = 120;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(kUpWithinS);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto r = c.Get("/healthz"); r && r->status == 200) return "";
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return "tessera serve exited (status " + std::to_string(status) +
               ") before it answered: " + ReadFile(log);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "tessera serve did not answer /healthz in " +
           std::to_string(kUpWithinS) + " s: " + ReadFile(log);
  }

  // Sends `signal` and reaps it; nothing if it is not running.
  void Stop(int signal = SIGTERM) {
    if (pid_ <= 0) return;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }

 private:
  pid_t pid_ = 0;
};

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_CLI_SERVE_PROCESS_H_
