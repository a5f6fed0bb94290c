#ifndef TESSERA_TESTS_TESTLIB_POSTGRES_SERVER_H_
#define TESSERA_TESTS_TESTLIB_POSTGRES_SERVER_H_

// A real PostgreSQL server for tests, started by the test itself: Debian's
// postgresql package's initdb into a temporary directory, the server on a
// free port of 127.0.0.1 (and a socket in that directory), password
// authentication (scram-sha-256) for user "tessera", stopped and removed
// at the end. PostgreSQL refuses to run as root: as root (CI), the server
// runs as user "nobody". Header-only, free of GoogleTest.
//
// A missing postgresql package is an error the test reports (error()),
// never a skip: scripts/setup.sh installs it.

#include <glob.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/testlib/loopback_socket.h"

namespace tessera::testlib {

class PostgresServer {
 public:
  static constexpr const char* kUser = "tessera";
  static constexpr const char* kPassword = "pg-test-secret";

  PostgresServer() { error_ = Start(); }
  ~PostgresServer() {
    Stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // "" when it runs, else why not (with the server's log).
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  // A file holding the password (what store.postgres.password_file names).
  std::string password_file() const { return dir_ + "/password"; }
  // The URL of database `db` (created by CreateDatabase), without the
  // password.
  std::string Url(const std::string& db = "postgres") const {
    return "postgresql://" + std::string(kUser) +
           "@127.0.0.1:" + std::to_string(port_) + "/" + db;
  }
  // A fresh database; false (and error() set) when it could not be made.
  bool CreateDatabase(const std::string& db) {
    return Psql("CREATE DATABASE " + db);
  }
  // Runs `sql` as the superuser on database `db`.
  bool Psql(const std::string& sql, const std::string& db = "postgres") {
    const std::string cmd =
        AsOwner("env PGPASSWORD=" + std::string(kPassword) + " " + bin_ +
                "/psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p " +
                std::to_string(port_) + " -U " + kUser + " -d " + db + " -c " +
                Quote(sql)) +
        " >> " + dir_ + "/psql.log 2>&1";
    if (std::system(cmd.c_str()) == 0) return true;
    error_ = "psql failed: " + sql + "\n" + Read(dir_ + "/psql.log");
    return false;
  }
  // Stops the server (fast shutdown: sessions are cut), or, with
  // `immediate`, as a crash would (no checkpoint; recovery at the next
  // start). Starts it again on the same port and data.
  bool Stop(bool immediate = false) {
    if (!running_) return true;
    running_ = false;
    return Run(Ctl() + " -m " + (immediate ? "immediate" : "fast") + " stop");
  }
  bool Restart() {
    if (running_) Stop();
    if (!Run(Ctl() + " -w -t 30 -o " + Quote(Options()) + " start")) {
      error_ = "pg_ctl start failed\n" + Read(dir_ + "/server.log");
      return false;
    }
    running_ = true;
    return true;
  }

 private:
  std::string Start() {
    bin_ = BinDir();
    if (bin_.empty()) {
      return "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin "
             "(Debian's postgresql package; scripts/setup.sh installs it)";
    }
    std::string pattern = "/tmp/tessera-pg-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) return "mkdtemp failed";
    dir_ = pattern;
    chmod(dir_.c_str(), 0755);
    std::ofstream(password_file()) << kPassword << "\n";
    if (geteuid() == 0) {
      // The server's user owns its directory (initdb checks).
      if (std::system(("chown -R nobody:nogroup " + dir_).c_str()) != 0) {
        return "cannot give " + dir_ + " to user nobody";
      }
    }
    port_ = FreeLoopbackPort();
    if (!Run(bin_ + "/initdb -D " + dir_ + "/data -U " + kUser +
             " --pwfile=" + password_file() +
             " --auth=scram-sha-256 -E UTF8 --no-locale --no-sync")) {
      return "initdb failed\n" + Read(dir_ + "/run.log");
    }
    if (!Restart()) return error_;
    return "";
  }

  // The newest version's binaries.
  static std::string BinDir() {
    glob_t g{};
    std::vector<std::string> found;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (found.empty()) return "";
    std::sort(found.begin(), found.end());
    const std::string& initdb = found.back();
    return initdb.substr(0, initdb.rfind('/'));
  }

  std::string Options() const {
    return "-p " + std::to_string(port_) + " -h 127.0.0.1 -k " + dir_ +
           " -c fsync=on -c max_connections=50";
  }
  std::string Ctl() const {
    return bin_ + "/pg_ctl -D " + dir_ + "/data -l " + dir_ + "/server.log";
  }
  // `cmd` as the server's user.
  static std::string AsOwner(const std::string& cmd) {
    return geteuid() == 0 ? "runuser -u nobody -- " + cmd : cmd;
  }
  bool Run(const std::string& cmd) const {
    const std::string full = AsOwner(cmd) + " >> " + dir_ + "/run.log 2>&1";
    return std::system(full.c_str()) == 0;
  }
  static std::string Quote(const std::string& s) {
    std::string out = "'";
    for (const char c : s)
      out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string bin_, dir_, error_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_TESTLIB_POSTGRES_SERVER_H_
