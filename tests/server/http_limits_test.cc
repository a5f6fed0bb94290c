// The transport's bounds over a real Service: slow clients cost the API
// nothing, a head that trickles is cut off, connections per address and in
// all are capped, a body announced too large is refused before it is sent.
// Timing is only asserted with generous margins (tests run two per core).

#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/auth.h"
#include "server/http_server.h"
#include "tests/server/one_gpu_server.h"
#include "tests/testlib/loopback_socket.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::scheduler {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using testlib::ConnectLoopback;
using testlib::SendAll;

// Everything the peer sends until it closes or `timeout` passes; `closed`
// tells which.
std::string ReadUntilClosed(int fd, std::chrono::milliseconds timeout,
                            bool* closed) {
  std::string out;
  const auto until = Clock::now() + timeout;
  *closed = false;
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - Clock::now());
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <=
        0) {
      continue;
    }
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *closed = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class HttpLimitsTest : public ::testing::Test {
 protected:
  void StartServer(int header_timeout_s, int per_client, int total) {
    server::ServeConfig config = OneGpuConfig(dir_, "127.0.0.1");
    config.max_body_bytes = 4096;
    config.header_timeout_s = header_timeout_s;
    config.max_connections_per_client = per_client;
    config.max_connections = total;
    auto served = StartServed(config);
    ASSERT_TRUE(served) << served.error().message;
    service_ = std::move(served->service);
    server_ = std::move(served->server);
    port_ = server_->port();
  }

  httplib::Result Get(const std::string& path) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(5, 0);
    c.set_connection_timeout(5, 0);
    return c.Get(path.c_str());
  }

  httplib::Result Submit() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(5, 0);
    c.set_connection_timeout(5, 0);
    const std::string body = nlohmann::json{
        {"command", {"true"}},
        {"resources",
         {{"gpu_milli", 100}}}}.dump();
    return c.Post("/v1/jobs", {{"Authorization", "Bearer alice-token"}}, body,
                  "application/json");
  }

  testlib::TempDir dir_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<server::HttpServer> server_;
  int port_ = 0;
};

TEST_F(HttpLimitsTest, AnswersWhile200SlowClientsAreConnected) {
  StartServer(10, 256, 1000);
  std::vector<int> slow;
  for (int i = 0; i < 200; ++i) {
    const int fd = ConnectLoopback(port_);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nX-Slow: 1\r\n"));
    slow.push_back(fd);
  }
  for (int fd : slow) SendAll(fd, "X-Slow: 2\r\n");
  const auto t0 = Clock::now();
  auto health = Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto submit = Submit();
  ASSERT_TRUE(submit);
  EXPECT_EQ(submit->status, 201) << submit->body;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  for (int fd : slow) close(fd);
}

TEST_F(HttpLimitsTest, ATricklingHeadIsCutOffAfterTheHeaderTimeout) {
  StartServer(1, 256, 1000);
  const int fd = ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\n"));
  // One header line every 100 ms: each arrives well within any per-read
  // timeout, but the head never ends.
  const auto t0 = Clock::now();
  bool closed = false;
  while (!closed && Clock::now() - t0 < std::chrono::seconds(15)) {
    if (!SendAll(fd, "X-Trickle: 1\r\n")) {
      closed = true;
      break;
    }
    ReadUntilClosed(fd, std::chrono::milliseconds(100), &closed);
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  close(fd);
  // The server itself goes on.
  auto health = Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(HttpLimitsTest, ConnectionsPerAddressAreCapped) {
  StartServer(10, 3, 1000);
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(ConnectLoopback(port_));
  // The fourth is answered 503 and closed without its request being read
  // (or reset, if the request crossed the close).
  const int extra = ConnectLoopback(port_);
  ASSERT_GE(extra, 0);
  SendAll(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  bool closed = false;
  const std::string answer =
      ReadUntilClosed(extra, std::chrono::seconds(5), &closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(answer, ::testing::AnyOf(HasSubstr(" 503 "), ""));
  if (!answer.empty()) {
    EXPECT_THAT(answer, HasSubstr("too many connections"));
  }
  EXPECT_EQ(answer.find(" 200 "), std::string::npos);
  close(extra);
  // Once one of the three closes, a new connection is served.
  close(held.back());
  held.pop_back();
  bool served = false;
  for (const auto until = Clock::now() + std::chrono::seconds(5);
       !served && Clock::now() < until;) {
    auto health = Get("/healthz");
    served = health && health->status == 200;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
  for (int fd : held) close(fd);
}

TEST_F(HttpLimitsTest, ConnectionsInAllAreCapped) {
  StartServer(10, 100, 2);
  const int a = ConnectLoopback(port_);
  const int b = ConnectLoopback(port_);
  const int extra = ConnectLoopback(port_);
  ASSERT_GE(extra, 0);
  bool closed = false;
  ReadUntilClosed(extra, std::chrono::seconds(5), &closed);
  EXPECT_TRUE(closed);
  close(extra);
  close(a);
  close(b);
}

TEST_F(HttpLimitsTest, ABodyAnnouncedTooLargeIsRefusedBeforeItIsSent) {
  StartServer(10, 256, 1000);
  const int fd = ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(
      SendAll(fd,
              "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
              "alice-token\r\nContent-Length: 1000000000\r\n\r\n"));
  bool closed = false;
  const std::string answer =
      ReadUntilClosed(fd, std::chrono::seconds(5), &closed);
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(answer, HasSubstr("{\"error\":\"the request body is larger "
                                "than max_body_bytes (4096 bytes)\"}"));
  close(fd);
}

TEST_F(HttpLimitsTest, MalformedHttpIs400AndKeepAliveWorks) {
  StartServer(10, 256, 1000);
  int fd = ConnectLoopback(port_);
  ASSERT_TRUE(SendAll(fd, "NOT HTTP AT ALL\r\n\r\n"));
  bool closed = false;
  std::string answer = ReadUntilClosed(fd, std::chrono::seconds(5), &closed);
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(answer, HasSubstr("{\"error\":\"malformed HTTP request\"}"));
  close(fd);

  // Two requests on one connection, the second answered too.
  fd = ConnectLoopback(port_);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  answer = ReadUntilClosed(fd, std::chrono::milliseconds(500), &closed);
  EXPECT_FALSE(closed);
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 200"));
  ASSERT_TRUE(SendAll(fd,
                      "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: "
                      "close\r\n\r\n"));
  answer = ReadUntilClosed(fd, std::chrono::seconds(5), &closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 404"));
  EXPECT_THAT(answer, HasSubstr("no route GET /nowhere"));
  close(fd);
}

TEST_F(HttpLimitsTest, StopClosesIdleConnections) {
  StartServer(10, 256, 1000);
  const int fd = ConnectLoopback(port_);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\n"));
  const auto t0 = Clock::now();
  server_->Stop();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  bool closed = false;
  ReadUntilClosed(fd, std::chrono::seconds(5), &closed);
  EXPECT_TRUE(closed);
  close(fd);
}

}  // namespace
}  // namespace tessera::scheduler
