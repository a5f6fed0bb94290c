// Parsers for scontrol's one-line records ("Key=Value Key=Value ..."). A
// value may hold spaces (paths, comments): a token without '=' continues
// the value before it.

#include "launch/slurm/slurm_state.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace tessera::launch {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

bool IsKeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '/' ||
         c == ':';
}

// "Key=" at the start of `token`: the key's length, or 0.
size_t KeyLength(std::string_view token) {
  const size_t eq = token.find('=');
  if (eq == 0 || eq == std::string_view::npos) return 0;
  if (!std::isalpha(static_cast<unsigned char>(token[0]))) return 0;
  for (size_t i = 0; i < eq; ++i) {
    if (!IsKeyChar(token[i])) return 0;
  }
  return eq;
}

Fields SplitRecord(std::string_view line) {
  Fields fields;
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    if (pos >= line.size()) break;
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view token = line.substr(pos, end - pos);
    const size_t key = KeyLength(token);
    if (key > 0) {
      fields.emplace_back(std::string(token.substr(0, key)),
                          std::string(token.substr(key + 1)));
    } else if (!fields.empty()) {
      fields.back().second += " " + std::string(token);
    }
    pos = end;
  }
  return fields;
}

const std::string* Get(const Fields& fields, std::string_view key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<int64_t> Int(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

// "gpu:4(S:0,1),shard:400" -> {"gpu:4(S:0,1)", "shard:400"}.
std::vector<std::string_view> SplitOutsideParens(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (i > start) parts.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      depth = std::max(0, depth - 1);
    }
  }
  return parts;
}

struct GresEntry {
  std::string name, type;
  int64_t count = 0;
};

// "gpu:idx0:1(S:0)" -> {gpu, idx0, 1}; "shard:400" -> {shard, "", 400};
// "gpu:a100" -> {gpu, a100, 1}.
GresEntry ParseGresEntry(std::string_view entry) {
  if (const size_t paren = entry.find('('); paren != std::string_view::npos) {
    entry = entry.substr(0, paren);
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= entry.size(); ++i) {
    if (i == entry.size() || entry[i] == ':') {
      parts.push_back(entry.substr(start, i - start));
      start = i + 1;
    }
  }
  GresEntry g;
  g.name = std::string(parts[0]);
  g.count = 1;
  if (parts.size() == 2) {
    if (auto n = Int(parts[1])) {
      g.count = *n;
    } else {
      g.type = std::string(parts[1]);
    }
  } else if (parts.size() >= 3) {
    g.type = std::string(parts[1]);
    g.count = Int(parts[2]).value_or(1);
  }
  return g;
}

// idx<N> with N < gpus: N, else -1.
int PinnedIndex(std::string_view type, int gpus) {
  if (type.substr(0, kPinnedGpuTypePrefix.size()) != kPinnedGpuTypePrefix) {
    return -1;
  }
  const auto n = Int(type.substr(kPinnedGpuTypePrefix.size()));
  return n && *n >= 0 && *n < gpus ? static_cast<int>(*n) : -1;
}

// Whether `entries` give each of the node's `gpus` GPUs its own type
// idx<N>, with count 1 each (`single_count`) or one count for all.
bool CoversAllGpus(const std::vector<GresEntry>& entries, int gpus,
                   bool single_count) {
  if (gpus == 0 || static_cast<int>(entries.size()) != gpus) return false;
  std::vector<bool> seen(static_cast<size_t>(gpus), false);
  for (const GresEntry& g : entries) {
    const int i = PinnedIndex(g.type, gpus);
    if (i < 0 || seen[static_cast<size_t>(i)]) return false;
    if (single_count ? g.count != 1 : g.count != entries[0].count) {
      return false;
    }
    seen[static_cast<size_t>(i)] = true;
  }
  return true;
}

SlurmNode ParseNode(const Fields& fields) {
  SlurmNode node;
  node.name = *Get(fields, "NodeName");
  if (const std::string* s = Get(fields, "State")) node.state = *s;
  const std::string* gres = Get(fields, "Gres");
  if (gres == nullptr || *gres == "(null)") return node;
  std::map<std::string, std::vector<GresEntry>> by_name;
  for (std::string_view part : SplitOutsideParens(*gres)) {
    GresEntry g = ParseGresEntry(part);
    by_name[g.name].push_back(std::move(g));
  }
  auto total = [&](const std::string& name) {
    int64_t n = 0;
    for (const GresEntry& g : by_name[name]) n += g.count;
    return n;
  };
  node.gpus = static_cast<int>(total("gpu"));
  node.shards = total("shard");
  node.mps = total("mps");
  node.gpus_pinned = CoversAllGpus(by_name["gpu"], node.gpus, true);
  node.shards_pinned = CoversAllGpus(by_name["shard"], node.gpus, false);
  node.mps_pinned = CoversAllGpus(by_name["mps"], node.gpus, false);
  return node;
}

}  // namespace

std::vector<int> ParseGresIndices(std::string_view gres) {
  std::vector<int> indices;
  constexpr std::string_view kIdx = "(IDX:";
  size_t pos = 0;
  while ((pos = gres.find(kIdx, pos)) != std::string_view::npos) {
    pos += kIdx.size();
    const size_t end = gres.find(')', pos);
    if (end == std::string_view::npos) break;
    std::string_view list = gres.substr(pos, end - pos);
    size_t start = 0;
    for (size_t i = 0; i <= list.size(); ++i) {
      if (i < list.size() && list[i] != ',') continue;
      const std::string_view range = list.substr(start, i - start);
      start = i + 1;
      const size_t dash = range.find('-');
      const auto lo = Int(range.substr(0, dash));
      const auto hi =
          dash == std::string_view::npos ? lo : Int(range.substr(dash + 1));
      if (!lo || !hi || *hi < *lo || *hi - *lo > 1024) continue;
      for (int64_t v = *lo; v <= *hi; ++v) {
        indices.push_back(static_cast<int>(v));
      }
    }
    pos = end;
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  return indices;
}

Result<std::vector<SlurmJob>> ParseScontrolJobs(std::string_view text) {
  std::vector<SlurmJob> jobs;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.rfind("No jobs in the system", 0) == 0) continue;
    const Fields fields = SplitRecord(line);
    const std::string* id = Get(fields, "JobId");
    const auto job_id = id ? Int(*id) : std::nullopt;
    if (!job_id) {
      return Internal("scontrol show job: line " + std::to_string(line_no) +
                      " has no JobId: '" + std::string(line.substr(0, 80)) +
                      "'");
    }
    SlurmJob job;
    job.job_id = *job_id;
    if (const std::string* het = Get(fields, "HetJobId")) {
      job.het_job_id = Int(*het).value_or(0);
    }
    for (auto [key, target] :
         {std::pair{"JobName", &job.name}, std::pair{"Comment", &job.comment},
          std::pair{"JobState", &job.state}, std::pair{"Reason", &job.reason},
          std::pair{"NodeList", &job.nodes}}) {
      if (const std::string* v = Get(fields, key)) *target = *v;
    }
    if (const std::string* code = Get(fields, "ExitCode")) {
      const size_t colon = code->find(':');
      job.exit_code = static_cast<int>(
          Int(std::string_view(*code).substr(0, colon)).value_or(0));
      if (colon != std::string::npos) {
        job.exit_signal = static_cast<int>(
            Int(std::string_view(*code).substr(colon + 1)).value_or(0));
      }
    }
    for (const auto& [k, v] : fields) {
      if (k != "GRES") continue;
      for (int i : ParseGresIndices(v)) job.gpu_indices.push_back(i);
    }
    std::sort(job.gpu_indices.begin(), job.gpu_indices.end());
    jobs.push_back(std::move(job));
  }
  return jobs;
}

SlurmOutcome ClassifySlurmJob(const SlurmJob& job) {
  // "CANCELLED by 0" (squeue, sacct) or "COMPLETING+": the leading word.
  std::string_view state = job.state;
  const size_t word = state.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
  if (word != std::string_view::npos) state = state.substr(0, word);
  SlurmOutcome out;
  static constexpr std::array<std::string_view, 4> kPending = {
      "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"};
  if (std::ranges::find(kPending, state) != kPending.end()) {
    out.phase = SlurmPhase::kPending;
    return out;
  }
  out.phase = SlurmPhase::kEnded;
  const std::string slurm_reason =
      job.reason.empty() || job.reason == "None" ? "" : " (" + job.reason + ")";
  if (state == "COMPLETED") {
    out.exit_code = job.exit_code;
  } else if (state == "FAILED") {
    if (job.exit_code != 0) {
      out.exit_code = job.exit_code;
    } else if (job.exit_signal != 0) {
      out.reason = "Slurm: FAILED, signal " + std::to_string(job.exit_signal) +
                   slurm_reason;
    } else {
      out.reason = "Slurm: FAILED" + slurm_reason;
    }
  } else if (state == "CANCELLED") {
    out.cancelled = true;
    out.reason = "cancelled in Slurm";
  } else if (state == "TIMEOUT") {
    out.reason = "Slurm: TIMEOUT (the job's time limit)";
  } else if (state == "OUT_OF_MEMORY") {
    out.reason = "Slurm: OUT_OF_MEMORY";
  } else if (state == "NODE_FAIL" || state == "BOOT_FAIL" ||
             state == "DEADLINE" || state == "PREEMPTED" ||
             state == "REVOKED" || state == "SPECIAL_EXIT") {
    out.reason = "Slurm: " + std::string(state) + slurm_reason;
  } else {
    out.phase = SlurmPhase::kActive;  // RUNNING, COMPLETING, SUSPENDED, ...
  }
  return out;
}

Result<std::map<std::string, SlurmNode>> ParseScontrolNodes(
    std::string_view text) {
  std::map<std::string, SlurmNode> nodes;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const Fields fields = SplitRecord(line);
    if (Get(fields, "NodeName") == nullptr) {
      return Internal("scontrol show node: a line has no NodeName: '" +
                      std::string(line.substr(0, 80)) + "'");
    }
    SlurmNode node = ParseNode(fields);
    std::string name = node.name;
    nodes.emplace(std::move(name), std::move(node));
  }
  return nodes;
}

bool IsTransientSlurmError(std::string_view message) {
  static constexpr std::string_view kTransient[] = {
      "unable to contact slurm controller",
      "unable to establish controller",
      "socket timed out",
      "timed out",
      "zero bytes were transmitted",
      "communication connection failure",
      "connection refused",
      "temporarily unable",
      "temporarily unavailable",
      "transport endpoint is not connected",
      "backup controller in standby",
      "slurmctld is busy",
      "authentication failure",  // munged down or restarting
      "protocol authentication error",
      "munge",
  };
  const std::string lower = Lower(message);
  return std::ranges::any_of(kTransient, [&](std::string_view t) {
    return lower.find(t) != std::string::npos;
  });
}

}  // namespace tessera::launch
