// The transport: Boost.Beast over Boost.Asio on one I/O thread, handlers on
// a worker pool. A connection's life, on the I/O thread:
//   accept -> over a connection cap? answer 503 and close
//          -> [TLS handshake]            (deadline header_timeout_s)
//          -> read the head              (deadline header_timeout_s)
//          -> Content-Length too large? answer 413 and close
//          -> [100 Continue] read body   (deadline body_timeout_s)
//          -> a worker runs the route; the answer is written back
//             (deadline body_timeout_s) -> keep-alive: read the next head.
// Only the I/O thread touches a connection (no strands needed); the
// registry of connections and the per-address counts are under `mu`.
// A deadline that passes closes the connection without an answer.

#include "http/transport.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace tessera::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using beast::error_code;

// A request head (request line and headers) larger than this is refused
// (431): tokens and kube-scheduler's headers are far smaller.
constexpr uint32_t kMaxHeadBytes = 16 * 1024;
// After refusing a request, the server reads (and drops) what the client
// still sends for at most this long before closing, so that the client
// sees the answer rather than a connection reset.
constexpr int kLingerS = 2;
// Accepting failed (out of descriptors): try again after this.
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);

int FromHex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded; in a query also '+' as a space. A bad escape stays as is.
std::string Decode(std::string_view text, bool query) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size() && FromHex(text[i + 1]) >= 0 &&
        FromHex(text[i + 2]) >= 0) {
      out.push_back(
          static_cast<char>(FromHex(text[i + 1]) * 16 + FromHex(text[i + 2])));
      i += 2;
    } else if (query && c == '+') {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void ParseTarget(std::string_view target, Request& req) {
  const size_t q = target.find('?');
  req.path = Decode(target.substr(0, q), false);
  if (q == std::string_view::npos) return;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      req.params.emplace_back(Decode(pair.substr(0, eq), true),
                              eq == std::string_view::npos
                                  ? ""
                                  : Decode(pair.substr(eq + 1), true));
    }
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
}

// The peer's address as clients are counted: IPv4-mapped IPv6 as IPv4.
std::string PeerAddress(const tcp::socket& socket) {
  error_code ec;
  asio::ip::address address = socket.remote_endpoint(ec).address();
  if (ec) return "?";
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  return address.to_string();
}

class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the connection unless a request of it is being answered.
  virtual void CloseIfIdle() = 0;
};

// The server's state; Server::Impl is this, named where sessions see it.
struct Core {
  explicit Core(ServerOptions o, Router r, ErrorWriter e)
      : options(std::move(o)),
        router(std::move(r)),
        error(std::move(e)),
        workers(static_cast<size_t>(std::max(1, options.worker_threads))) {}

  Status Open();
  void Accept();
  void OnAccept(tcp::socket socket);
  // Counts a new connection from `peer`; false when a cap is reached.
  bool Admit(const std::string& peer);
  void Release(Connection* connection, const std::string& peer);

  const ServerOptions options;
  const Router router;
  const ErrorWriter error;
  // Declared before the I/O objects, so that they outlive any connection.
  std::mutex mu;  // guards the three below
  std::map<std::string, int> per_client;
  int total = 0;
  std::set<Connection*> connections;
  asio::io_context io{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      keep_running;
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  std::optional<asio::ssl::context> ssl;
  asio::thread_pool workers;
  std::thread io_thread;
  int port = 0;
  bool stopping = false;  // I/O thread only

  std::mutex stop_mu;  // serialises Stop()
  bool stopped = false;
};

template <typename Stream>
class Session : public Connection,
                public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Core& server, Stream stream, std::string peer)
      : server_(server), stream_(std::move(stream)), peer_(std::move(peer)) {}
  ~Session() override { server_.Release(this, peer_); }

  void Run() {
    if constexpr (kTls) {
      Lowest().expires_after(
          std::chrono::seconds(server_.options.header_timeout_s));
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](error_code ec) {
                                if (ec) return self->Close();
                                self->NoteClientCertificate();
                                self->ReadHead();
                              });
    } else {
      ReadHead();
    }
  }

  void CloseIfIdle() override {
    if (!busy_) Close();
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Close() {
    error_code ec;
    Lowest().socket().close(ec);
  }

  void NoteClientCertificate() {
    if constexpr (kTls) {
      SSL* ssl = stream_.native_handle();
      X509* cert = SSL_get1_peer_certificate(ssl);
      if (cert == nullptr) return;
      cert_verified_ = SSL_get_verify_result(ssl) == X509_V_OK;
      char cn[256] = {0};
      if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName,
                                    cn, sizeof cn) > 0) {
        cert_cn_ = cn;
      }
      X509_free(cert);
    }
  }

  void ReadHead() {
    busy_ = false;
    path_.clear();
    if (server_.stopping) return Close();
    parser_.emplace();
    parser_->header_limit(kMaxHeadBytes);
    // The body's limit is set once the head is read, so that a refusal
    // knows the path (the extender's errors have their own shape). Not
    // boost::none: Beast 1.74 compares a length with it as "over the limit".
    parser_->body_limit(std::numeric_limits<uint64_t>::max());
    Lowest().expires_after(
        std::chrono::seconds(server_.options.header_timeout_s));
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](
                                 error_code ec, size_t) { self->OnHead(ec); });
  }

  // The path of the request being read, once its head is (for errors).
  void NotePath() {
    if (!parser_ || !parser_->is_header_done()) return;
    const auto target = parser_->get().target();
    path_ = Decode(std::string_view(target.data(), target.size())
                       .substr(0, target.find('?')),
                   false);
  }

  void OnHead(error_code ec) {
    NotePath();
    if (ec) return OnReadError(ec);
    const auto& head = parser_->get();
    const boost::optional<uint64_t> length = parser_->content_length();
    const auto max = static_cast<uint64_t>(BodyLimit().bytes);
    if (length && *length > max) return Refuse(413, TooLarge());
    parser_->body_limit(max);  // a chunked body's
    if (bhttp::token_list(head[bhttp::field::expect]).exists("100-continue") &&
        !parser_->is_done()) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(
          bhttp::status::continue_, head.version());
      Lowest().expires_after(
          std::chrono::seconds(server_.options.body_timeout_s));
      return bhttp::async_write(
          stream_, *cont,
          [self = this->shared_from_this(), cont](error_code e, size_t) {
            if (e) return self->Close();
            self->ReadBody();
          });
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return Dispatch();
    Lowest().expires_after(
        std::chrono::seconds(server_.options.body_timeout_s));
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](error_code ec, size_t) {
                        if (ec) return self->OnReadError(ec);
                        self->Dispatch();
                      });
  }

  // The body limit of this request's path.
  ServerOptions::BodyLimit BodyLimit() const {
    auto it = server_.options.path_body_limits.find(path_);
    if (it != server_.options.path_body_limits.end()) return it->second;
    return {server_.options.max_body_bytes, "max_body_bytes"};
  }

  std::string TooLarge() const {
    const ServerOptions::BodyLimit limit = BodyLimit();
    return "the request body is larger than " + limit.setting + " (" +
           std::to_string(limit.bytes) + " bytes)";
  }

  // A read that ended without a request: the client left or was too slow
  // (close), or sent something that is not HTTP or too large (answer).
  void OnReadError(error_code ec) {
    if (ec == bhttp::error::body_limit) return Refuse(413, TooLarge());
    if (ec == bhttp::error::header_limit) {
      return Refuse(431, "the request head is larger than " +
                             std::to_string(kMaxHeadBytes) + " bytes");
    }
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof ||
        ec == bhttp::error::partial_message ||
        ec == asio::ssl::error::stream_truncated ||
        ec.category() == asio::error::get_ssl_category()) {
      return Close();
    }
    Refuse(400, "malformed HTTP request");
  }

  void Dispatch() {
    busy_ = true;
    bhttp::request<bhttp::string_body> message = parser_->release();
    parser_.reset();
    Request req;
    req.method = std::string(message.method_string());
    ParseTarget(
        std::string_view(message.target().data(), message.target().size()),
        req);
    for (const auto& field : message) {
      req.headers.emplace_back(std::string(field.name_string()),
                               std::string(field.value()));
    }
    req.body = std::move(message.body());
    req.remote_address = peer_;
    req.tls = kTls;
    req.client_cert_verified = cert_verified_;
    req.client_cert_cn = cert_cn_;
    const bool keep_alive = message.keep_alive();
    const unsigned version = message.version();
    asio::post(
        server_.workers,
        [self = this->shared_from_this(), req = std::move(req), keep_alive,
         version, guard = asio::make_work_guard(server_.io)]() mutable {
          Response res;
          self->server_.router.Dispatch(req, res, self->server_.error);
          asio::io_context& io = self->server_.io;
          // Moved, not copied: the last reference must drop on the I/O thread.
          asio::post(io, [self = std::move(self), res = std::move(res),
                          keep_alive, version]() mutable {
            self->Write(std::move(res), keep_alive, version);
          });
        });
  }

  void Refuse(int status, const std::string& message) {
    busy_ = true;
    Response res;
    server_.error(path_, status, message, res);
    Write(std::move(res), false, 11);
  }

  void Write(Response res, bool keep_alive, unsigned version) {
    auto out = std::make_shared<bhttp::response<bhttp::string_body>>();
    out->version(version);
    out->result(static_cast<unsigned>(res.status));
    for (auto& [name, value] : res.headers) out->insert(name, value);
    if (!res.content_type.empty()) {
      out->set(bhttp::field::content_type, res.content_type);
    }
    out->body() = std::move(res.body);
    out->keep_alive(keep_alive && !server_.stopping);
    out->prepare_payload();
    Lowest().expires_after(
        std::chrono::seconds(server_.options.body_timeout_s));
    bhttp::async_write(
        stream_, *out,
        [self = this->shared_from_this(), out](error_code ec, size_t) {
          if (ec) return self->Close();
          if (out->keep_alive()) return self->ReadHead();
          self->Linger();
        });
  }

  // After the last answer: end our side, then drop what the client still
  // sends until it closes or kLingerS pass.
  void Linger() {
    busy_ = false;
    if constexpr (kTls) {
      return Close();
    } else {
      if (server_.stopping) return Close();
      error_code ec;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      if (ec) return Close();
      Lowest().expires_after(std::chrono::seconds(kLingerS));
      Drain();
    }
  }

  void Drain() {
    auto discard = std::make_shared<std::array<char, 4096>>();
    stream_.async_read_some(
        asio::buffer(*discard),
        [self = this->shared_from_this(), discard](error_code ec, size_t) {
          if (ec || self->server_.stopping) return self->Close();
          self->Drain();
        });
  }

  Core& server_;
  Stream stream_;
  const std::string peer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string path_;   // of the request being read, for error bodies
  bool busy_ = false;  // a request is with a worker or being answered
  bool cert_verified_ = false;
  std::string cert_cn_;
};

}  // namespace

struct Server::Impl : Core {
  using Core::Core;
};

Status Core::Open() {
  if (options.tls.enabled()) {
    ssl.emplace(asio::ssl::context::tls_server);
    ssl->set_options(
        asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
        asio::ssl::context::no_tlsv1_1);
    error_code ec;
    ssl->use_certificate_chain_file(options.tls.cert_file, ec);
    if (ec) {
      return BadInput("tls.cert_file: cannot load '" + options.tls.cert_file +
                      "' (" + ec.message() + ")");
    }
    ssl->use_private_key_file(options.tls.key_file, asio::ssl::context::pem,
                              ec);
    if (ec) {
      return BadInput("tls.key_file: cannot load '" + options.tls.key_file +
                      "' (" + ec.message() + ")");
    }
    const std::string& ca = options.tls.client_ca_file;
    if (!ca.empty()) {
      ssl->load_verify_file(ca, ec);
      if (ec) {
        return BadInput("tls.client_ca_file: cannot load '" + ca + "' (" +
                        ec.message() + ")");
      }
      // Ask for a certificate, naming the CAs; a client without one still
      // connects (bearer tokens), one whose certificate does not verify
      // fails the handshake.
      ssl->set_verify_mode(asio::ssl::verify_peer);
      SSL_CTX* ctx = ssl->native_handle();
      SSL_CTX_set_client_CA_list(ctx, SSL_load_client_CA_file(ca.c_str()));
      static const unsigned char kSessionContext[] = "tessera";
      SSL_CTX_set_session_id_context(ctx, kSessionContext,
                                     sizeof kSessionContext - 1);
    }
  }
  error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(
      options.host, std::to_string(options.port),
      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return BadInput("cannot resolve '" + options.host + "'");
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  acceptor.open(endpoint.protocol(), ec);
  // SO_REUSEADDR lets a restarted service bind past connections in
  // TIME_WAIT; SO_REUSEPORT (never set) would let a second one share it.
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return BadInput("cannot listen on " + options.host + ":" +
                    std::to_string(options.port) + " (" + ec.message() + ")");
  }
  port = acceptor.local_endpoint().port();
  return {};
}

void Core::Accept() {
  acceptor.async_accept(io, [this](error_code ec, tcp::socket socket) {
    if (stopping || !acceptor.is_open()) return;
    if (ec) {
      // Out of descriptors, most likely: wait for some to be freed.
      accept_retry.expires_after(kAcceptRetry);
      accept_retry.async_wait([this](error_code) { Accept(); });
      return;
    }
    OnAccept(std::move(socket));
    Accept();
  });
}

bool Core::Admit(const std::string& peer) {
  const std::lock_guard<std::mutex> lock(mu);
  int& mine = per_client[peer];
  if (total >= options.max_connections ||
      mine >= options.max_connections_per_client) {
    if (mine == 0) per_client.erase(peer);
    return false;
  }
  ++mine;
  ++total;
  return true;
}

void Core::Release(Connection* connection, const std::string& peer) {
  const std::lock_guard<std::mutex> lock(mu);
  connections.erase(connection);
  auto it = per_client.find(peer);
  if (it != per_client.end() && --it->second <= 0) per_client.erase(it);
  --total;
}

void Core::OnAccept(tcp::socket socket) {
  const std::string peer = PeerAddress(socket);
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);  // no Nagle + delayed-ACK wait
  if (!Admit(peer)) {
    // Answer 503 without reading the request, if the socket takes it at
    // once (plain HTTP only), and close.
    if (!ssl) {
      Response res;
      error("", 503,
            "too many connections from " + peer +
                " (max_connections_per_client " +
                std::to_string(options.max_connections_per_client) +
                ", max_connections " + std::to_string(options.max_connections) +
                ")",
            res);
      std::string text = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: " +
                         res.content_type + "\r\nContent-Length: " +
                         std::to_string(res.body.size()) +
                         "\r\nConnection: close\r\n\r\n" + res.body;
      socket.non_blocking(true, ec);
      socket.send(asio::buffer(text), 0, ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
    }
    socket.close(ec);
    return;
  }
  if (ssl) {
    auto session =
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
            *this,
            beast::ssl_stream<beast::tcp_stream>(std::move(socket), *ssl),
            peer);
    {
      const std::lock_guard<std::mutex> registry(mu);
      connections.insert(session.get());
    }
    session->Run();
  } else {
    auto session = std::make_shared<Session<beast::tcp_stream>>(
        *this, beast::tcp_stream(std::move(socket)), peer);
    {
      const std::lock_guard<std::mutex> registry(mu);
      connections.insert(session.get());
    }
    session->Run();
  }
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options,
                                              Router router,
                                              ErrorWriter error) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(router),
                                     std::move(error));
  TESSERA_RETURN_IF_ERROR(impl->Open());
  impl->keep_running.emplace(impl->io.get_executor());
  impl->Accept();
  Impl* raw = impl.get();
  impl->io_thread = std::thread([raw] {
    for (;;) {
      try {
        raw->io.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tessera: HTTP I/O thread: %s\n", e.what());
      }
    }
  });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::Stop() {
  const std::lock_guard<std::mutex> lock(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl] {
    impl->stopping = true;
    error_code ec;
    impl->acceptor.close(ec);
    impl->accept_retry.cancel();
    std::vector<Connection*> open;
    {
      const std::lock_guard<std::mutex> registry(impl->mu);
      open.assign(impl->connections.begin(), impl->connections.end());
    }
    // Only this thread destroys connections, so the pointers stay valid.
    for (Connection* c : open) c->CloseIfIdle();
  });
  // io.run() returns once every connection is closed: a request with a
  // worker holds a work guard until its answer is posted back.
  impl->keep_running.reset();
  impl->io_thread.join();
  impl->workers.join();
}

int Server::port() const { return impl_->port; }

}  // namespace tessera::http
