#ifndef TESSERA_HTTP_TRANSPORT_H_
#define TESSERA_HTTP_TRANSPORT_H_

// A small HTTP/1.1 server for the queue API and the Kubernetes extender:
// requests and responses as plain values, a router of (method, regex path)
// routes, and an event-driven transport (Boost.Asio + Boost.Beast, optional
// TLS through OpenSSL) that bounds what each client may hold. One I/O
// thread accepts connections, reads request heads and bodies against
// deadlines and writes answers; complete requests run on a small worker
// pool, so a slow or idle client costs a socket and a buffer, not a
// thread. docs/http_api.md ("Connections and limits") has the defaults
// and what a client over a limit sees.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace tessera::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // decoded, without the query
  std::vector<std::pair<std::string, std::string>> params;  // the query's
  Headers headers;
  std::string body;
  // The path's regex groups: matches[0] the whole path, [1] the first group.
  std::vector<std::string> matches;
  std::string remote_address;  // the peer's IP address, e.g. "127.0.0.1"
  bool tls = false;
  // The client presented a certificate that verified against the
  // configured client CA (TLS with client_ca_file only).
  bool client_cert_verified = false;
  std::string client_cert_cn;  // its subject's common name, if any

  // Header names match in any case; the first value, or "".
  bool has_header(std::string_view name) const;
  std::string header(std::string_view name) const;
  // The first value of query parameter `name`, or "".
  bool has_param(std::string_view name) const;
  std::string param(std::string_view name) const;
};

struct Response {
  int status = 200;
  Headers headers;  // besides Content-Type and Content-Length
  std::string content_type;
  std::string body;

  void set_header(std::string name, std::string value);
  void set_content(std::string content, std::string type);
};

using Handler = std::function<void(const Request&, Response&)>;
// The body of an error the transport or router answers itself (no route,
// body too large, malformed HTTP, too many connections), so that every
// error of the service has the same shape. `path` may be "" when the
// request was never read.
using ErrorWriter = std::function<void(std::string_view path, int status,
                                       const std::string& message, Response&)>;

// Routes by method and a regex over the whole path; the first match wins.
// Register everything before the server starts; Dispatch is then
// thread-safe.
class Router {
 public:
  void Get(const std::string& pattern, Handler handler);
  void Post(const std::string& pattern, Handler handler);
  // Runs before the handler of every route that matched: false when it
  // answered itself (the handler is then skipped). One; null: none.
  using Hook = std::function<bool(const Request&, Response&)>;
  void Before(Hook hook) { before_ = std::move(hook); }
  // Runs the matching route's handler (filling req.matches), or answers 404
  // through `error`. An exception escaping a handler becomes a 500.
  void Dispatch(Request& req, Response& res, const ErrorWriter& error) const;

 private:
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
  };
  std::vector<Route> routes_;
  Hook before_;
};

// Defaults, with the reasons for their values (docs/http_api.md).
// A request head (request line and headers) must arrive within this: a
// real client sends it in one packet; a trickling one is cut off. The same
// bound covers the idle time before the next request of a kept-alive
// connection and a TLS handshake.
inline constexpr int kDefaultHeaderTimeoutS = 10;
// A body must arrive within this once its head is read: 1 MiB (the default
// max_body_bytes) at 35 KiB/s, far below any real link.
inline constexpr int kDefaultBodyTimeoutS = 30;
// Connections open at once from one address. Every local client shares
// 127.0.0.1, and the target is 200 slow clients beside real ones.
inline constexpr int kDefaultMaxConnectionsPerClient = 256;
// Connections open at once in all: each costs a descriptor and a few KiB;
// the service's soft descriptor limit is commonly 1024 (raise it with
// ulimit -n when raising this).
inline constexpr int kDefaultMaxConnections = 1000;
// Handlers block on the service's lock and SQLite for milliseconds; more
// threads than this only queue on that lock.
inline constexpr int kDefaultWorkerThreads = 8;

struct TlsOptions {
  std::string cert_file;       // PEM: the server's certificate (chain)
  std::string key_file;        // PEM: its private key
  std::string client_ca_file;  // PEM: CAs that sign client certificates
  bool enabled() const { return !cert_file.empty(); }
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // an address or a name ("localhost")
  int port = 0;                    // 0: any free port
  int64_t max_body_bytes = int64_t{1} << 20;
  // Paths whose bodies may be larger (or must be smaller): the limit and
  // the name of the setting a 413 names (e.g. "/v1/models":
  // {64 MiB, "max_upload_bytes"}).
  struct BodyLimit {
    int64_t bytes = 0;
    std::string setting;
  };
  std::map<std::string, BodyLimit> path_body_limits;
  int header_timeout_s = kDefaultHeaderTimeoutS;
  int body_timeout_s = kDefaultBodyTimeoutS;
  int max_connections_per_client = kDefaultMaxConnectionsPerClient;
  int max_connections = kDefaultMaxConnections;
  int worker_threads = kDefaultWorkerThreads;
  TlsOptions tls;
};

// Serves a Router. Thread-safe; Stop (or destruction) ends it.
class Server {
 public:
  // Binds host:port (SO_REUSEADDR, never SO_REUSEPORT) and starts serving.
  // kBadInput when the address cannot be bound or the TLS files do not
  // load (naming the file).
  static Result<std::unique_ptr<Server>> Start(ServerOptions options,
                                               Router router,
                                               ErrorWriter error);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Stops accepting, closes idle connections, lets the requests in flight
  // finish and be answered, and joins the threads. Idempotent.
  void Stop();
  int port() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether `host` names only this machine: 127.0.0.0/8, ::1 or "localhost".
bool IsLoopbackHost(std::string_view host);

}  // namespace tessera::http

#endif  // TESSERA_HTTP_TRANSPORT_H_
