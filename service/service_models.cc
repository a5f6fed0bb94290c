// The model files jobs may name: the admin's model_roots and the uploads
// (docs/http_api.md, POST /v1/models; docs/serve_config.md, model_roots).
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "graph/graph.h"
#include "service/service_internal.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::kMaxModelFields;
using scheduler::kMaxModelNodes;

namespace {

namespace fs = std::filesystem;

Result<std::string> Sha256Hex(const std::string& bytes) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                              EVP_MD_CTX_free);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) != 1) {
    return Internal("SHA-256 failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Writes `bytes` to `path` durably: a temporary file in the same directory,
// fsynced, renamed over `path`, and the directory fsynced.
Status WriteDurably(const fs::path& path, const std::string& bytes) {
  std::string temp = (path.parent_path() / ".upload-XXXXXX").string();
  const int fd = mkstemp(temp.data());
  if (fd < 0)
    return Internal(
        Errno("cannot create a file in " + path.parent_path().string()));
  size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
  const std::string error = ok ? "" : Errno("cannot write " + temp);
  ok = close(fd) == 0 && ok;
  if (!ok || rename(temp.c_str(), path.c_str()) != 0) {
    const std::string message =
        error.empty() ? Errno("cannot store " + path.string()) : error;
    unlink(temp.c_str());
    return Internal(message);
  }
  const int dir = open(path.parent_path().c_str(), O_RDONLY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return {};
}

}  // namespace

Status Service::Impl::SetUpModelFiles() {
  model_files.max_model_bytes = options.max_model_bytes;
  model_files.max_upload_bytes = options.max_upload_bytes;
  model_files.upload_dir = (fs::path(options.log_dir) / "models").string();
  for (const std::string& root : options.model_roots) {
    std::error_code ec;
    const fs::path canonical = fs::canonical(root, ec);
    if (ec || !fs::is_directory(canonical, ec)) {
      return BadInput("model_roots: '" + root +
                      "' is not a directory (each root must exist)");
    }
    model_files.roots.push_back(canonical.string());
  }
  return {};
}

int64_t Service::max_upload_bytes() const {
  const std::shared_ptr<Impl> impl = Current();
  return impl->options.max_upload_bytes;
}

Result<UploadedModel> Service::UploadModel(const User& /*user*/,
                                           const std::string& bytes) {
  const std::shared_ptr<Impl> impl = Current();
  TESSERA_RETURN_IF_ERROR(impl->LeaderOnly());
  Impl& m = *impl;
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size == 0) {
    return BadInput("model: the body is empty; send the ONNX model's bytes");
  }
  if (size > m.options.max_upload_bytes) {
    return BadInput("model: " + std::to_string(size) +
                    " bytes, more than limits.max_upload_bytes (" +
                    std::to_string(m.options.max_upload_bytes) +
                    "); tessera submit --model strips the weights, which the "
                    "service does not need");
  }
  Result<std::string> id = Sha256Hex(bytes);
  TESSERA_RETURN_IF_ERROR(id);
  graph::LoadOptions options;
  options.max_nodes = kMaxModelNodes;
  options.max_fields = kMaxModelFields;
  // One load at a time, and never under the queue's lock: at most one
  // model of max_upload_bytes is parsed at any moment.
  MutexLock lock(m.upload_mu);
  Result<graph::Model> model =
      graph::LoadModelFromBytes(bytes, "the uploaded model", options);
  if (!model) return model.error();
  UploadedModel uploaded{*id, size,
                         static_cast<int64_t>(model->graph->num_nodes())};
  const fs::path dir(m.model_files.upload_dir);
  const fs::path path = dir / (*id + ".onnx");
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return uploaded;  // content-addressed
  fs::create_directories(dir, ec);
  if (ec) {
    return Internal("cannot create " + dir.string() + ": " + ec.message());
  }
  TESSERA_RETURN_IF_ERROR(WriteDurably(path, bytes));
  return uploaded;
}

}  // namespace tessera::service
