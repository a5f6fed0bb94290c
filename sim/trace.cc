// LoadTraceNodes, LoadTracePods: openb CSV files by their header's names.
#include "sim/trace.h"

#include <charconv>
#include <functional>
#include <map>

#include "common/strings.h"
#include "common/yaml_reader.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::kFullGpuMilli;
using scheduler::NodeInfo;
using scheduler::TypicalTask;
using scheduler::TypicalWorkload;

namespace {

// The pieces of `s` between `sep`s, as strings.
std::vector<std::string> Pieces(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (const std::string_view piece : Split(s, sep)) out.emplace_back(piece);
  return out;
}

// A CSV file's header as name -> column.
class Columns {
 public:
  Columns(const std::string& path, const std::string& header) : path_(path) {
    const std::vector<std::string> names = Pieces(header, ',');
    for (size_t i = 0; i < names.size(); ++i) index_[Trim(names[i])] = i;
  }
  Status Require(std::initializer_list<const char*> names) const {
    for (const char* n : names) {
      if (!index_.count(n)) {
        return BadInput(path_ + ": no column '" + n +
                        "' in the header (an openb trace file has " +
                        Expected() + ")");
      }
    }
    return {};
  }
  // The cell of `name` in `cells`, or "" when the column is absent.
  std::string Cell(const std::vector<std::string>& cells,
                   const std::string& name) const {
    const auto it = index_.find(name);
    if (it == index_.end() || it->second >= cells.size()) return "";
    return Trim(cells[it->second]);
  }

 private:
  static std::string Trim(std::string s) {
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
    while (!s.empty() && s.front() == ' ') s.erase(s.begin());
    return s;
  }
  std::string Expected() const {
    return path_.find("node") != std::string::npos
               ? "sn,cpu_milli,memory_mib,gpu,model"
               : "name,cpu_milli,memory_mib,num_gpu,gpu_milli";
  }
  std::string path_;
  std::map<std::string, size_t> index_;
};

// A non-negative integer, or the reason it is not one.
Result<int64_t> Count(const std::string& text, const std::string& column) {
  int64_t v = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      v < 0) {
    return BadInput("column '" + column + "': '" + text +
                    "' is not a non-negative integer");
  }
  return v;
}

// GPUs of one node, or of one pod: past this a count is a damaged cell, and
// it must fit the int it is stored in (the openb trace has 8 per node).
constexpr int64_t kMaxTraceGpus = 1024;

Status CheckGpus(int64_t n, const std::string& column) {
  if (n <= kMaxTraceGpus) return {};
  return BadInput("column '" + column + "': " + std::to_string(n) +
                  " GPUs is more than " + std::to_string(kMaxTraceGpus));
}

// -1 for an empty cell.
Result<double> Time(const std::string& text, const std::string& column) {
  if (text.empty()) return -1.0;
  auto v = Count(text, column);
  if (!v) return v.error();
  return static_cast<double>(*v);
}

// Reads `text` (from `path`) row by row; `parse` turns a row's cells into a
// Row or an error that skips it (or, strict, fails the file).
template <typename Row>
Result<TraceFile<Row>> ParseCsv(
    std::string_view text, const std::string& path, const TraceOptions& options,
    std::initializer_list<const char*> required,
    const std::function<Result<Row>(const Columns&,
                                    const std::vector<std::string>&)>& parse) {
  const std::vector<std::string> lines = Pieces(text, '\n');
  if (lines.empty() || lines[0].empty()) return BadInput(path + ": empty file");
  const Columns columns(path, lines[0]);
  TESSERA_RETURN_IF_ERROR(columns.Require(required));
  TraceFile<Row> file;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i] == "\r") continue;
    auto row = parse(columns, Pieces(lines[i], ','));
    if (row) {
      file.rows.push_back(std::move(row).value());
      continue;
    }
    const std::string where = path + ":" + std::to_string(i + 1) + ": ";
    if (options.strict) return BadInput(where + row.error().message);
    file.skipped.push_back(where + row.error().message);
  }
  return file;
}

}  // namespace

Result<TraceFile<TraceNode>> ParseTraceNodes(std::string_view text,
                                             const std::string& source,
                                             const TraceOptions& options) {
  return ParseCsv<TraceNode>(
      text, source, options, {"sn", "cpu_milli", "memory_mib", "gpu", "model"},
      [](const Columns& c,
         const std::vector<std::string>& cells) -> Result<TraceNode> {
        TraceNode n;
        n.name = c.Cell(cells, "sn");
        if (n.name.empty()) return BadInput("column 'sn': empty node name");
        auto cpu = Count(c.Cell(cells, "cpu_milli"), "cpu_milli");
        auto mem = Count(c.Cell(cells, "memory_mib"), "memory_mib");
        auto gpus = Count(c.Cell(cells, "gpu"), "gpu");
        for (const auto* r : {&cpu, &mem, &gpus}) {
          if (!*r) return r->error();
        }
        TESSERA_RETURN_IF_ERROR(CheckGpus(*gpus, "gpu"));
        n.cpu_milli = *cpu;
        n.memory_mib = *mem;
        n.gpus = static_cast<int>(*gpus);
        n.model = c.Cell(cells, "model");
        if (n.gpus > 0 && n.model.empty()) {
          return BadInput("column 'model': a node with GPUs needs a model");
        }
        return n;
      });
}

Result<TraceFile<TracePod>> ParseTracePods(std::string_view text,
                                           const std::string& source,
                                           const TraceOptions& options) {
  return ParseCsv<TracePod>(
      text, source, options,
      {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"},
      [](const Columns& c,
         const std::vector<std::string>& cells) -> Result<TracePod> {
        TracePod p;
        p.name = c.Cell(cells, "name");
        auto cpu = Count(c.Cell(cells, "cpu_milli"), "cpu_milli");
        auto mem = Count(c.Cell(cells, "memory_mib"), "memory_mib");
        auto num = Count(c.Cell(cells, "num_gpu"), "num_gpu");
        auto milli = Count(c.Cell(cells, "gpu_milli"), "gpu_milli");
        for (const auto* r : {&cpu, &mem, &num, &milli}) {
          if (!*r) return r->error();
        }
        TESSERA_RETURN_IF_ERROR(CheckGpus(*num, "num_gpu"));
        if (*milli > kFullGpuMilli) {
          return BadInput("column 'gpu_milli': " + std::to_string(*milli) +
                          " is more than a whole GPU (1000)");
        }
        if (*num > 0 && *milli == 0) {
          return BadInput("column 'gpu_milli': 0 for a pod with GPUs");
        }
        p.cpu_milli = *cpu;
        p.memory_mib = *mem;
        p.num_gpu = static_cast<int>(*num);
        p.gpu_milli = static_cast<int>(*milli);
        for (const std::string& m : Pieces(c.Cell(cells, "gpu_spec"), '|')) {
          if (!m.empty()) p.gpu_spec.push_back(m);
        }
        p.qos = c.Cell(cells, "qos");
        for (const auto& [column, field] :
             {std::pair{"creation_time", &p.creation_time},
              std::pair{"deletion_time", &p.deletion_time},
              std::pair{"scheduled_time", &p.scheduled_time}}) {
          auto t = Time(c.Cell(cells, column), column);
          if (!t) return t.error();
          *field = *t;
        }
        return p;
      });
}

Result<TraceFile<TraceNode>> LoadTraceNodes(const std::string& path,
                                            const TraceOptions& options) {
  auto text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseTraceNodes(*text, path, options);
}

Result<TraceFile<TracePod>> LoadTracePods(const std::string& path,
                                          const TraceOptions& options) {
  auto text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseTracePods(*text, path, options);
}

Topology TraceTopology(const std::vector<TraceNode>& nodes,
                       const std::string& pool, int64_t gpu_memory_mib,
                       bool cpu_nodes) {
  Topology t;
  t.pools = {pool};
  for (const TraceNode& n : nodes) {
    if (n.gpus == 0 && !cpu_nodes) continue;
    NodeInfo node;
    node.name = n.name;
    node.pool = pool;
    node.cpu_milli = n.cpu_milli;
    node.memory_mib = n.memory_mib;
    for (int g = 0; g < n.gpus; ++g) {
      node.gpus.push_back(static_cast<int>(t.gpus.size()));
      t.gpus.push_back({n.name + "/gpu" + std::to_string(g),
                        static_cast<int>(t.nodes.size()), g, n.model,
                        gpu_memory_mib});
    }
    t.nodes.push_back(std::move(node));
  }
  return t;
}

Resources PodDemand(const TracePod& pod) {
  Resources r;
  r.cpu_milli = pod.cpu_milli;
  r.memory_mib = pod.memory_mib;
  if (pod.num_gpu > 1 || (pod.num_gpu == 1 && pod.gpu_milli >= kFullGpuMilli)) {
    r.gpus = pod.num_gpu;
  } else if (pod.num_gpu == 1) {
    r.gpu_milli = pod.gpu_milli;
  }
  return r;
}

PlacementRequest PodRequest(const TracePod& pod) {
  PlacementRequest r{PodDemand(pod), {}};
  if (pod.wants_gpu()) r.gpu_kinds = pod.gpu_spec;
  return r;
}

Workload PodWorkload(const std::vector<TracePod>& pods, double coverage) {
  std::vector<TypicalTask> tasks;
  tasks.reserve(pods.size());
  double memory = 0, milli = 0;
  for (const TracePod& p : pods) {
    if (p.wants_gpu()) {
      memory += static_cast<double>(p.memory_mib);
      milli += static_cast<double>(p.num_gpu) * p.gpu_milli;
    }
    TypicalTask t;
    t.cpu_milli = p.cpu_milli;
    if (p.wants_gpu()) {
      t.gpus = p.num_gpu;
      t.milli = p.gpu_milli;
      t.kinds = p.gpu_spec;
    }
    tasks.push_back(std::move(t));
  }
  Workload w = TypicalWorkload(tasks, coverage);
  w.memory_mib_per_milli = milli > 0 ? memory / milli : 0;
  return w;
}

}  // namespace tessera::sim
