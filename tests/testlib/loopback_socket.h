#ifndef TESSERA_TESTS_TESTLIB_LOOPBACK_SOCKET_H_
#define TESSERA_TESTS_TESTLIB_LOOPBACK_SOCKET_H_

// Raw TCP to a server on this machine, for the tests and benchmarks that
// speak HTTP byte by byte (a head that never ends, a body announced and
// never sent) where a client library would not let them. Header-only and
// free of GoogleTest, so the benchmarks may use it too.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

namespace tessera::testlib {

// Whether a listening socket could bind 127.0.0.1:port now.
inline bool LoopbackPortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int one = 1;  // as servers bind: a TIME_WAIT leftover is no owner
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

// Claims `port` for this process among the test processes of this
// machine: a file /tmp/tessera-test-ports/<port> holding the claimer's
// pid, created exclusively; a claim whose process has ended is taken
// over. False when a live process holds it.
inline bool ClaimPort(int port) {
  const std::string dir = "/tmp/tessera-test-ports";
  mkdir(dir.c_str(), 01777);
  chmod(dir.c_str(), 01777);  // every user's tests share it
  const std::string path = dir + "/" + std::to_string(port);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      const std::string pid = std::to_string(getpid()) + "\n";
      const bool ok =
          write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
      close(fd);
      return ok;
    }
    long holder = 0;
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      if (std::fscanf(f, "%ld", &holder) != 1) holder = 0;
      std::fclose(f);
    }
    if (holder == getpid()) return false;  // ours already: pick another
    // Held by a live process (or half written a moment ago): not ours.
    if (holder <= 0 || kill(static_cast<pid_t>(holder), 0) == 0 ||
        errno != ESRCH) {
      return false;
    }
    unlink(path.c_str());  // its process ended: the claim is stale
  }
  return false;
}

// A loopback TCP port that was free a moment ago, for a server the test
// starts (and may stop and start again on the same port).
// - It is taken below the kernel's ephemeral range
//   (net.ipv4.ip_local_port_range, 32768-60999 by default), where no
//   outgoing connection's local end can take it while the server is down:
//   a port from bind(0) is in that range, and a database restarted on one
//   can fail to bind when the tests' own clients, connecting thousands of
//   times a second, took it meanwhile.
// - It is claimed (ClaimPort) so that tests running side by side never
//   pick the same one between the pick and their server's start.
inline int FreeLoopbackPort() {
  static std::atomic<uint32_t> calls{0};
  std::mt19937 rng(
      static_cast<uint32_t>(getpid()) * 2654435761u ^
      static_cast<uint32_t>(
          std::chrono::steady_clock::now().time_since_epoch().count()) ^
      (calls++ * 40503u));
  int ephemeral_low = 32768, ephemeral_high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &ephemeral_low, &ephemeral_high) != 2) {
      ephemeral_low = 32768;
      ephemeral_high = 60999;
    }
    std::fclose(f);
  }
  // Below the range when there is room there, else above it.
  int low = std::max(10000, ephemeral_low - 12000), high = ephemeral_low;
  if (high - low < 2000) {
    low = ephemeral_high + 1;
    high = 65536;
  }
  for (int attempt = 0; attempt < 1000 && high > low; ++attempt) {
    const int port = low + static_cast<int>(rng() % (high - low));
    if (LoopbackPortFree(port) && ClaimPort(port)) return port;
  }
  // No room outside the range (an odd kernel setting): any free port.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A TCP connection to 127.0.0.1:port, or -1.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends all of `text`; false when the peer has closed or reset the
// connection (no SIGPIPE) or the send fails otherwise.
inline bool SendAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_TESTLIB_LOOPBACK_SOCKET_H_
