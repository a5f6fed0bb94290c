// The API server client: cpp-httplib, a fresh connection per request (bind
// is rare next to the queue's traffic; no connection to keep healthy).

#include "k8s/k8s_api.h"

#include <httplib.h>

#include <fstream>
#include <sstream>
#include <utility>

namespace tessera::k8s {
namespace {

Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Internal("k8s.token_file: cannot read '" + path + "'");
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' ||
                            token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

class HttpK8sApiClient : public K8sApiClient {
 public:
  explicit HttpK8sApiClient(K8sConfig config) : config_(std::move(config)) {}

  Result<K8sApiReply> Send(const std::string& method, const std::string& path,
                           const std::string& body) override {
    httplib::Headers headers = {{"Accept", "application/json"}};
    if (!config_.token_file.empty()) {
      Result<std::string> token = ReadToken(config_.token_file);
      TESSERA_RETURN_IF_ERROR(token);
      headers.emplace("Authorization", "Bearer " + *token);
    }
    httplib::Client client(config_.api_server);
    client.set_connection_timeout(kK8sApiTimeoutS, 0);
    client.set_read_timeout(kK8sApiTimeoutS, 0);
    client.set_write_timeout(kK8sApiTimeoutS, 0);
    if (!config_.ca_file.empty()) client.set_ca_cert_path(config_.ca_file);
    httplib::Result res =
        method == "POST" ? client.Post(path, headers, body, "application/json")
                         : client.Get(path, headers);
    if (!res) {
      return Unavailable("cannot reach the API server at " +
                         config_.api_server + ": " +
                         httplib::to_string(res.error()));
    }
    return K8sApiReply{res->status, res->body};
  }

 private:
  const K8sConfig config_;
};

}  // namespace

Result<std::unique_ptr<K8sApiClient>> MakeK8sApiClient(
    const K8sConfig& config) {
  if (config.api_server.empty()) {
    return BadInput("k8s.api_server: not set");
  }
  for (const auto& [key, path] : {std::pair{"token_file", &config.token_file},
                                  std::pair{"ca_file", &config.ca_file}}) {
    if (!path->empty() && !std::ifstream(*path)) {
      return BadInput(std::string("k8s.") + key + ": cannot read '" + *path +
                      "'");
    }
  }
  return std::unique_ptr<K8sApiClient>(new HttpK8sApiClient(config));
}

}  // namespace tessera::k8s
