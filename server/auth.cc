// Token hashing (OpenSSL's EVP interface) and bearer-token checks.

#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <memory>

namespace tessera::server {
namespace {

constexpr std::string_view kBearer = "Bearer ";

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// The scheme is case-insensitive (RFC 7235); "bearer" is accepted too.
bool HasBearerScheme(std::string_view header) {
  if (header.size() < kBearer.size()) return false;
  for (size_t i = 0; i < kBearer.size(); ++i) {
    char c = header[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    char want = kBearer[i];
    if (want >= 'A' && want <= 'Z') want = static_cast<char>(want - 'A' + 'a');
    if (c != want) return false;
  }
  return true;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(
      EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  // These fail only when OpenSSL cannot allocate; a hash of nothing then
  // matches no user (no entry's hash is empty).
  if (ctx == nullptr ||
      EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest.data(), &length) != 1) {
    return "";
  }
  constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size_t{2} * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

std::optional<UserEntry> Authenticate(const std::vector<UserEntry>& users,
                                      std::string_view authorization) {
  authorization = Trim(authorization);
  if (!HasBearerScheme(authorization)) return std::nullopt;
  const std::string_view token = Trim(authorization.substr(kBearer.size()));
  if (token.empty()) return std::nullopt;
  const std::string hash = Sha256Hex(token);
  if (hash.size() != 64) return std::nullopt;
  const UserEntry* found = nullptr;
  for (const UserEntry& user : users) {
    if (user.token_sha256.size() == hash.size() &&
        CRYPTO_memcmp(user.token_sha256.data(), hash.data(), hash.size()) ==
            0) {
      found = &user;
    }
  }
  if (found == nullptr) return std::nullopt;
  return *found;
}

}  // namespace tessera::server
