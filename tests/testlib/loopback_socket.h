#ifndef TESSERA_TESTS_TESTLIB_LOOPBACK_SOCKET_H_
#define TESSERA_TESTS_TESTLIB_LOOPBACK_SOCKET_H_

// Raw TCP to a server on this machine, for the tests and benchmarks that
// speak HTTP byte by byte (a head that never ends, a body announced and
// never sent) where a client library would not let them. Header-only and
// free of GoogleTest, so the benchmarks may use it too.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string_view>

namespace tessera::testlib {

// A loopback TCP port that was free a moment ago.
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
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
