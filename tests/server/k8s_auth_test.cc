// HTTPS and who may call the scheduler extender's routes: certificates are
// made in the test (a throwaway CA, a server and a client certificate it
// signs, and a client certificate of another CA) with OpenSSL's C API.

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/auth.h"
#include "server/http_server.h"
#include "tests/server/one_gpu_server.h"
#include "tests/testlib/onnx_model_builder.h"

namespace tessera::scheduler {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertDeleter {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyDeleter>;
using Cert = std::unique_ptr<X509, CertDeleter>;

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, signed by issuer (self-signed when
// issuer is null); a CA, or a leaf for server and client use.
Cert MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer,
              EVP_PKEY* issuer_key, bool ca, long serial) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME_add_entry_by_txt(
      X509_get_subject_name(cert.get()), "CN", MBSTRING_ASC,
      reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (ca) {
    AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign");
  } else {
    AddExtension(cert.get(), signer, NID_basic_constraints, "CA:FALSE");
    AddExtension(cert.get(), signer, NID_subject_alt_name,
                 "IP:127.0.0.1,DNS:localhost");
    AddExtension(cert.get(), signer, NID_ext_key_usage,
                 "serverAuth,clientAuth");
  }
  X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256());
  return cert;
}

void WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  if (cert != nullptr) PEM_write_X509(f, cert);
  if (key != nullptr) {
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  }
  std::fclose(f);
}

// A CA and its certificates, and another CA's client certificate.
struct Pki {
  explicit Pki(const testlib::TempDir& dir) {
    Key ca_key(EVP_EC_gen("P-256"));
    Cert ca =
        MakeCert(ca_key.get(), "tessera test CA", nullptr, nullptr, true, 1);
    Key server_key(EVP_EC_gen("P-256"));
    Cert server =
        MakeCert(server_key.get(), "tessera", ca.get(), ca_key.get(), false, 2);
    Key client_key(EVP_EC_gen("P-256"));
    Cert client = MakeCert(client_key.get(), "kube-scheduler", ca.get(),
                           ca_key.get(), false, 3);
    Key other_ca_key(EVP_EC_gen("P-256"));
    Cert other_ca =
        MakeCert(other_ca_key.get(), "another CA", nullptr, nullptr, true, 4);
    Key rogue_key(EVP_EC_gen("P-256"));
    Cert rogue = MakeCert(rogue_key.get(), "kube-scheduler", other_ca.get(),
                          other_ca_key.get(), false, 5);
    ca_file = dir.File("ca.pem");
    WritePem(ca_file, ca.get(), nullptr);
    server_cert = dir.File("server.pem");
    WritePem(server_cert, server.get(), nullptr);
    server_key_file = dir.File("server-key.pem");
    WritePem(server_key_file, nullptr, server_key.get());
    client_cert = dir.File("client.pem");
    WritePem(client_cert, client.get(), nullptr);
    client_key_file = dir.File("client-key.pem");
    WritePem(client_key_file, nullptr, client_key.get());
    rogue_cert = dir.File("rogue.pem");
    WritePem(rogue_cert, rogue.get(), nullptr);
    rogue_key_file = dir.File("rogue-key.pem");
    WritePem(rogue_key_file, nullptr, rogue_key.get());
  }
  std::string ca_file, server_cert, server_key_file, client_cert,
      client_key_file, rogue_cert, rogue_key_file;
};

// A filter call kube-scheduler could make: a pod asking for no GPU.
std::string FilterArgs() {
  return json{
      {"Pod",
       {{"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "u1"}}},
        {"spec", {{"containers", {{{"name", "c"}}}}}}}},
      {"NodeNames", {"node0"}}}
      .dump();
}

class K8sAuthTest : public ::testing::Test {
 protected:
  // httplib's TLS client writes without MSG_NOSIGNAL: a server that drops
  // a rogue client's connection must not kill the test with SIGPIPE.
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }

  server::ServeConfig Config(const std::string& host) const {
    server::ServeConfig config = OneGpuConfig(dir_, host);
    config.service.start_thread = false;
    config.k8s_extender = true;
    config.users.push_back(
        {User{"sched", "", false, ""}, server::Sha256Hex("sched-token"), true});
    return config;
  }

  void Start(const server::ServeConfig& config) {
    server_.reset();
    service_.reset();
    auto served = StartServed(config);
    ASSERT_TRUE(served) << served.error().message;
    service_ = std::move(served->service);
    server_ = std::move(served->server);
  }

  server::ServeConfig TlsConfig(const std::string& host) const {
    server::ServeConfig config = Config(host);
    config.tls = {pki_.server_cert, pki_.server_key_file, pki_.ca_file};
    return config;
  }

  // An HTTPS client that checks the server against the test CA, with a
  // client certificate when `cert` is set.
  std::unique_ptr<httplib::SSLClient> Https(const std::string& cert = "",
                                            const std::string& key = "") {
    auto c = cert.empty() ? std::make_unique<httplib::SSLClient>(
                                "127.0.0.1", server_->port())
                          : std::make_unique<httplib::SSLClient>(
                                "127.0.0.1", server_->port(), cert, key);
    c->set_ca_cert_path(pki_.ca_file.c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(5, 0);
    return c;
  }

  httplib::Result PlainFilter(const httplib::Headers& headers = {}) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(5, 0);
    return c.Post("/k8s/filter", headers, FilterArgs(), "application/json");
  }

  testlib::TempDir dir_;
  Pki pki_{dir_};
  std::unique_ptr<Service> service_;
  std::unique_ptr<server::HttpServer> server_;
};

TEST_F(K8sAuthTest, HttpsServesTheQueueApiWithTokens) {
  Start(TlsConfig("127.0.0.1"));
  auto c = Https();
  auto health = c->Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto jobs = c->Get("/v1/jobs", {{"Authorization", "Bearer alice-token"}});
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200) << jobs->body;
  auto anonymous = c->Get("/v1/jobs");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
}

TEST_F(K8sAuthTest, OffLoopbackTheExtenderWantsAClientCertificate) {
  Start(TlsConfig("0.0.0.0"));
  auto with_cert = Https(pki_.client_cert, pki_.client_key_file)
                       ->Post("/k8s/filter", FilterArgs(), "application/json");
  ASSERT_TRUE(with_cert) << httplib::to_string(with_cert.error());
  EXPECT_EQ(with_cert->status, 200) << with_cert->body;

  auto without = Https()->Post("/k8s/filter", FilterArgs(), "application/json");
  ASSERT_TRUE(without);
  EXPECT_EQ(without->status, 401);
  const json body = json::parse(without->body);
  EXPECT_THAT(body.value("Error", ""), HasSubstr("client certificate"));
  EXPECT_EQ(body.value("Error", ""), body.value("error", "x"));

  // A certificate of another CA: the handshake fails (or, should the
  // client not notice, the request is refused).
  auto rogue = Https(pki_.rogue_cert, pki_.rogue_key_file)
                   ->Post("/k8s/filter", FilterArgs(), "application/json");
  if (rogue) {
    EXPECT_EQ(rogue->status, 401);
  }

  // A client certificate is for the extender only: the queue API still
  // wants a token.
  auto jobs = Https(pki_.client_cert, pki_.client_key_file)->Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 401);
}

TEST_F(K8sAuthTest, OffLoopbackTokensOfSchedulersAndAdminsWork) {
  Start(Config("0.0.0.0"));
  auto none = PlainFilter();
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_TRUE(json::parse(none->body).contains("Error"));
  auto sched = PlainFilter({{"Authorization", "Bearer sched-token"}});
  ASSERT_TRUE(sched);
  EXPECT_EQ(sched->status, 200) << sched->body;
  auto user = PlainFilter({{"Authorization", "Bearer alice-token"}});
  ASSERT_TRUE(user);
  EXPECT_EQ(user->status, 403);
  auto bad = PlainFilter({{"Authorization", "Bearer nobody"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 401);
  EXPECT_THAT(server::K8sAuthWarning(Config("0.0.0.0")),
              HasSubstr("bearer tokens of k8s-scheduler"));
}

TEST_F(K8sAuthTest, OffLoopbackWithoutCredentialsEverythingIs401) {
  server::ServeConfig config = Config("0.0.0.0");
  config.users.pop_back();  // no k8s-scheduler, no admin
  EXPECT_THAT(server::K8sAuthWarning(config),
              HasSubstr("answer 401 to every call"));
  Start(config);
  auto none = PlainFilter();
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
}

TEST_F(K8sAuthTest, AllowUnauthenticatedOpensTheExtender) {
  server::ServeConfig config = Config("0.0.0.0");
  config.k8s.allow_unauthenticated = true;
  EXPECT_EQ(server::K8sAuthWarning(config), "");
  Start(config);
  auto none = PlainFilter();
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200) << none->body;
}

TEST_F(K8sAuthTest, OnLoopbackTheExtenderNeedsNoCredentials) {
  EXPECT_EQ(server::K8sAuthWarning(Config("127.0.0.1")), "");
  Start(Config("127.0.0.1"));
  auto none = PlainFilter();
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200) << none->body;
  // Release stays admin only.
  httplib::Client c("127.0.0.1", server_->port());
  auto release = c.Post("/k8s/release", "{}", "application/json");
  ASSERT_TRUE(release);
  EXPECT_EQ(release->status, 401);
}

TEST_F(K8sAuthTest, TlsFilesThatDoNotLoadAreBadInput) {
  server::ServeConfig config = TlsConfig("127.0.0.1");
  config.tls.cert_file = dir_.File("missing.pem");
  auto service =
      Service::Start(config.service, std::make_unique<testlib::IdleLauncher>());
  ASSERT_TRUE(service);
  auto server = server::HttpServer::Start(**service, config);
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().code, ErrorCode::kBadInput);
  EXPECT_THAT(server.error().message, HasSubstr("tls.cert_file"));
}

}  // namespace
}  // namespace tessera::scheduler
