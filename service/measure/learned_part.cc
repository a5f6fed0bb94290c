// LearnedPart and FingerprintOf (learned_part_internal.h).

#include <algorithm>
#include <filesystem>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "service/measure/learned_part_internal.h"

namespace tessera::service::service_internal {
namespace {

using nlohmann::json;
using scheduler::ModelFingerprint;
using scheduler::SizingSample;

// A file's identity for sizing: "path:CANONICAL@SIZE@MTIME".
std::string FileIdentity(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path canonical = fs::canonical(path, ec);
  const fs::path& p = ec ? fs::path(path) : canonical;
  const auto size = fs::file_size(p, ec);
  const auto mtime = fs::last_write_time(p, ec);
  return "path:" + p.string() + "@" + std::to_string(ec ? 0 : size) + "@" +
         std::to_string(ec ? 0 : mtime.time_since_epoch().count());
}

json FingerprintJson(const ModelFingerprint& fp) {
  return {{"graph", fp.graph_hash},
          {"batch", fp.batch},
          {"precision", fp.precision},
          {"training", fp.training},
          {"runtime", fp.runtime}};
}

json SampleJson(const SizingSample& s) {
  json j = {{"peak_mib", s.peak_mib}, {"hit_cap", s.hit_cap}, {"at", s.at}};
  if (s.step_s) {
    j["step_s"] = *s.step_s;
    j["gpu_kind"] = s.gpu_kind;
  }
  return j;
}

// The stored record is the service's own: a damaged one is refused whole
// (the service starts without what it learned, and says why).
Result<SizingSample> ParseSample(const json& j) {
  SizingSample s;
  if (!j.is_object() || !j.contains("peak_mib") ||
      !j["peak_mib"].is_number_integer() || j["peak_mib"].get<int64_t>() < 0) {
    return BadInput("a sample without a peak_mib");
  }
  s.peak_mib = j["peak_mib"].get<int64_t>();
  s.hit_cap = j.value("hit_cap", false);
  s.at = j.value("at", 0.0);
  if (j.contains("step_s")) {
    if (!j["step_s"].is_number() || !(j["step_s"].get<double>() > 0)) {
      return BadInput("a sample's step_s is not a positive number");
    }
    s.step_s = j["step_s"].get<double>();
    s.gpu_kind = j.value("gpu_kind", "");
  }
  return s;
}

}  // namespace

ModelFingerprint FingerprintOf(const scheduler::ModelRequest& m) {
  ModelFingerprint fp;
  fp.graph_hash =
      m.upload.empty() ? FileIdentity(m.path) : "sha256:" + m.upload;
  fp.batch = m.batch;
  fp.precision = !m.amp.empty()     ? "amp-" + m.amp
                 : !m.dtype.empty() ? m.dtype
                                    : "as exported";
  fp.training = m.train;
  fp.runtime = "pytorch";
  return fp;
}

Status LearnedPart::Load(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return BadInput("the learned record is not a JSON object");
  }
  scheduler::SizingBook book;
  std::map<std::string, InterferenceFit> fits;
  const json empty_list = json::array();
  const json empty_map = json::object();
  const json& models = j.contains("models") ? j["models"] : empty_list;
  if (!models.is_array()) return BadInput("models: not a list");
  for (const json& entry : models) {
    if (!entry.is_object()) return BadInput("models: an entry not an object");
    ModelFingerprint fp;
    const json& f =
        entry.contains("fingerprint") ? entry["fingerprint"] : empty_map;
    if (!f.is_object()) return BadInput("models: a fingerprint not an object");
    fp.graph_hash = f.value("graph", "");
    fp.batch = f.value("batch", int64_t{0});
    fp.precision = f.value("precision", "");
    fp.training = f.value("training", false);
    fp.runtime = f.value("runtime", "");
    const json& samples =
        entry.contains("samples") ? entry["samples"] : empty_list;
    if (!samples.is_array()) return BadInput("models: samples not a list");
    for (const json& s : samples) {
      Result<SizingSample> sample = ParseSample(s);
      if (!sample) return sample.error().WithContext("models." + fp.graph_hash);
      book.Add(fp, *sample);
    }
  }
  const json& laws = j.contains("interference") ? j["interference"] : empty_map;
  if (!laws.is_object()) return BadInput("interference: not an object");
  for (const auto& [kind, f] : laws.items()) {
    if (!f.is_object())
      return BadInput("interference." + kind + ": not an object");
    InterferenceFit fit;
    fit.xy = f.value("xy", 0.0);
    fit.xx = f.value("xx", 0.0);
    fit.samples = f.value("samples", 0);
    if (fit.xx < 0 || fit.samples < 0) {
      return BadInput("interference." + kind + ": negative sums");
    }
    fits[kind] = fit;
  }
  book_ = std::move(book);
  fits_ = std::move(fits);
  return {};
}

std::string LearnedPart::Json() const {
  json models = json::array();
  for (const auto& [fp, samples] : book_.samples()) {
    json list = json::array();
    for (const SizingSample& s : samples) list.push_back(SampleJson(s));
    models.push_back({{"fingerprint", FingerprintJson(fp)}, {"samples", list}});
  }
  json fits = json::object();
  for (const auto& [kind, f] : fits_) {
    fits[kind] = {{"xy", f.xy}, {"xx", f.xx}, {"samples", f.samples}};
  }
  return json{{"models", models}, {"interference", fits}}.dump();
}

void LearnedPart::AddSample(const ModelFingerprint& fp, const SizingSample& s) {
  book_.Add(fp, s);
  samples_dirty_ = true;
  while (book_.samples().size() > kMaxFingerprints) {
    const ModelFingerprint* oldest = nullptr;
    double oldest_at = std::numeric_limits<double>::infinity();
    for (const auto& [f, q] : book_.samples()) {
      const double at = q.empty() ? 0 : q.back().at;
      if (at < oldest_at) {
        oldest_at = at;
        oldest = &f;
      }
    }
    book_.Erase(ModelFingerprint(*oldest));
  }
}

bool LearnedPart::Due(double now) const {
  return samples_dirty_ ||
         (fits_dirty_ && now - stored_at_ >= kStoreFitsEveryS);
}

void LearnedPart::Stored(double now) {
  samples_dirty_ = fits_dirty_ = false;
  stored_at_ = now;
}

}  // namespace tessera::service::service_internal
