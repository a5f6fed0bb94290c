#include "server/auth.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace tessera::scheduler {

// The service the server fronts (service/).
using service::User;

namespace {

std::vector<server::UserEntry> Users() {
  server::UserEntry alice;
  alice.user =
      User{.name = "alice", .team = "ml", .admin = false, .token_name = ""};
  alice.token_sha256 = server::Sha256Hex("alice-token");
  server::UserEntry root;
  root.user = User{.name = "root", .team = "", .admin = true, .token_name = ""};
  root.token_sha256 = server::Sha256Hex("root-token");
  return {alice, root};
}

TEST(Sha256Hex, MatchesKnownVectors) {
  // FIPS 180-2, appendix B.1, and the hash of nothing.
  EXPECT_EQ(server::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(server::Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // The demo token of examples/serve.yaml (printf %s ... | sha256sum).
  EXPECT_EQ(server::Sha256Hex("alice-demo-token"),
            "bba775a1794a2ccaa524798e32cea98187c9a32d80433d760a92d449bfddff66");
}

TEST(Authenticate, AcceptsEachUsersToken) {
  const std::vector<server::UserEntry> users = Users();
  std::optional<server::UserEntry> alice =
      server::Authenticate(users, "Bearer alice-token");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->user.name, "alice");
  EXPECT_EQ(alice->user.team, "ml");
  EXPECT_FALSE(alice->user.admin);
  std::optional<server::UserEntry> root =
      server::Authenticate(users, "Bearer root-token");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->user.name, "root");
  EXPECT_TRUE(root->user.admin);
}

TEST(Authenticate, SchemeIsCaseInsensitiveAndSpacesAreTrimmed) {
  const std::vector<server::UserEntry> users = Users();
  EXPECT_TRUE(server::Authenticate(users, "bearer alice-token").has_value());
  EXPECT_TRUE(
      server::Authenticate(users, "BEARER   alice-token  ").has_value());
}

TEST(Authenticate, RejectsUnknownTokens) {
  const std::vector<server::UserEntry> users = Users();
  EXPECT_FALSE(server::Authenticate(users, "Bearer alice-token2").has_value());
  EXPECT_FALSE(server::Authenticate(users, "Bearer alice-toke").has_value());
  EXPECT_FALSE(server::Authenticate(users, "Bearer ALICE-TOKEN").has_value());
  // The hash itself is not a token.
  EXPECT_FALSE(
      server::Authenticate(users, "Bearer " + server::Sha256Hex("alice-token"))
          .has_value());
  EXPECT_FALSE(server::Authenticate({}, "Bearer alice-token").has_value());
}

TEST(Authenticate, RejectsMalformedHeaders) {
  const std::vector<server::UserEntry> users = Users();
  for (const char* header :
       {"", "Bearer", "Bearer ", "Bearer    ", "alice-token",
        "Basic YWxpY2U6dG9rZW4=", "Token alice-token", "Bearer-alice-token",
        "Beareralice-token"}) {
    EXPECT_FALSE(server::Authenticate(users, header).has_value()) << header;
  }
}

}  // namespace
}  // namespace tessera::scheduler
