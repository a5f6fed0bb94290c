#ifndef TESSERA_TESTS_SERVER_HTTP_REQUEST_H_
#define TESSERA_TESTS_SERVER_HTTP_REQUEST_H_

// The server tests' HTTP client: one request on a fresh connection over a
// socket, so that the tests need none of cpp-httplib's build flags.

#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/testlib/loopback_socket.h"

namespace tessera::scheduler {

struct Reply {
  int status = 0;
  std::string headers;  // the raw header block, lower-cased names kept as is
  std::string body;
  nlohmann::json Json() const {
    return nlohmann::json::parse(body, nullptr, false);
  }
  // The value of header `name` in the header block ("" if absent).
  std::string Header(const std::string& name) const {
    const std::string key = "\r\n" + name + ": ";
    const size_t at = headers.find(key);
    if (at == std::string::npos) return "";
    const size_t start = at + key.size();
    return headers.substr(start, headers.find("\r\n", start) - start);
  }
};

// One request on a fresh connection ("Connection: close"), read to EOF.
// `extra` is more header lines, each ending in "\r\n".
inline Reply Http(int port, const std::string& method, const std::string& path,
                  const std::string& token = "", const std::string& body = "",
                  const std::string& extra = "") {
  const int fd = testlib::ConnectLoopback(port);
  if (fd < 0) return {};
  std::string request = method + " " + path +
                        " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += extra;
  if (method == "POST") {
    request += "Content-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  testlib::SendAll(fd, request);
  std::string raw;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) {
    raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  Reply reply;
  const size_t end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || end == std::string::npos) return reply;
  reply.status = std::stoi(raw.substr(9, 3));
  reply.headers = raw.substr(0, end);
  reply.body = raw.substr(end + 4);
  return reply;
}

}  // namespace tessera::scheduler

#endif  // TESSERA_TESTS_SERVER_HTTP_REQUEST_H_
