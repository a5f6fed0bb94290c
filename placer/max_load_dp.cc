// SolveContiguousMaxLoad: the exact optimum of the max-load model over
// contiguous splits, by dynamic programming over the ideals of the DAG
// (Tarnawski et al., NeurIPS 2020, section 4): f(I, a, c) is the least
// largest load placing the ideal I on a accelerators and c CPUs, each
// device taking I' \ I for a chain of ideals I ⊂ I'.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "placer/max_load.h"

namespace tessera::placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using Bits = std::vector<uint64_t>;

struct BitsHash {
  size_t operator()(const Bits& b) const {
    uint64_t h = 1469598103934665603ull;
    for (const uint64_t w : b) h = (h ^ w) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

bool Has(const Bits& b, int i) { return (b[i / 64] >> (i % 64)) & 1; }
void Set(Bits& b, int i) { b[i / 64] |= uint64_t{1} << (i % 64); }

class Dp {
 public:
  Dp(const MaxLoadProblem& p, const MaxLoadDpOptions& o) : p_(p), o_(o) {
    n_ = static_cast<int>(p.nodes.size());
    words_ = (n_ + 63) / 64;
    preds_.resize(n_);
    succs_.resize(n_);
    out_cost_.assign(n_, 0);
    for (const MaxLoadEdge& e : p.edges) {
      preds_[e.to].push_back(e.from);
      succs_[e.from].push_back(e.to);
      out_cost_[e.from] = std::max(out_cost_[e.from], e.cost);
    }
    for (const MaxLoadNode& node : p.nodes) {
      if (node.color >= 0) ++color_total_[node.color];
    }
  }

  Result<MaxLoadDpResult> Run() {
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = Enumerate(); !s.ok()) return s.error();
    const int ideals = static_cast<int>(ideals_.size());
    const int k = p_.accelerators, cpus = p_.cpus;
    const size_t per = static_cast<size_t>(k + 1) * (cpus + 1);
    best_.assign(per * ideals, kInf);
    from_.assign(per * ideals, {-1, -1});
    best_[0] = 0;  // the empty ideal, no device used
    for (int i = 0; i < ideals; ++i) {
      bool any = false;
      for (size_t s = 0; s < per; ++s) any = any || best_[per * i + s] < kInf;
      if (!any) continue;
      Extend(i, per);
      if (blocks_ > o_.max_blocks) {
        return Infeasible(
            p_.source + ": more than " + std::to_string(o_.max_blocks) +
            " blocks (pairs of ideals) to try over " + std::to_string(ideals) +
            " ideals; the exact search stops there");
      }
    }
    const int full = ideals - 1;  // enumerated by size: V is the last
    MaxLoadDpResult out;
    out.ideals = ideals;
    double best = kInf;
    size_t at = 0;
    for (size_t s = 0; s < per; ++s) {
      if (best_[per * full + s] < best) {
        best = best_[per * full + s];
        at = s;
      }
    }
    if (best == kInf) {
      return Infeasible(p_.source +
                        ": no contiguous split fits (memory, color classes "
                        "or nodes only a CPU runs, on " +
                        std::to_string(k) + " accelerators and " +
                        std::to_string(cpus) + " CPUs)");
    }
    out.max_load = best;
    out.optimal = true;
    out.placement.device.assign(n_, -1);
    // Walk back: each step's block goes to the device it was charged to.
    int ideal = full;
    size_t state = at;
    while (ideal != 0) {
      const auto [prev, prev_state] = from_[per * ideal + state];
      const int a = static_cast<int>(state) / (cpus + 1);
      const int c = static_cast<int>(state) % (cpus + 1);
      const int pa = prev_state / (cpus + 1);
      const int device = a != pa ? a - 1 : k + (c - 1);
      for (int v = 0; v < n_; ++v) {
        if (Has(ideals_[ideal], v) && !Has(ideals_[prev], v)) {
          out.placement.device[v] = device;
        }
      }
      ideal = prev;
      state = static_cast<size_t>(prev_state);
    }
    out.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    return out;
  }

 private:
  // Every ideal, in order of size (the empty one first, V last).
  Status Enumerate() {
    Bits empty(words_, 0);
    index_.emplace(empty, 0);
    ideals_.push_back(empty);
    for (size_t i = 0; i < ideals_.size(); ++i) {
      for (int v = 0; v < n_; ++v) {
        if (Has(ideals_[i], v) || !Ready(ideals_[i], v)) continue;
        Bits next = ideals_[i];
        Set(next, v);
        if (index_.count(next)) continue;
        if (static_cast<int64_t>(ideals_.size()) >= o_.max_states) {
          return Infeasible(p_.source + ": more than " +
                            std::to_string(o_.max_states) +
                            " ideals (contiguous sets) to explore; the "
                            "exact search stops there");
        }
        index_.emplace(next, static_cast<int>(ideals_.size()));
        ideals_.push_back(std::move(next));
      }
    }
    return {};
  }

  bool Ready(const Bits& ideal, int v) const {
    return std::all_of(preds_[v].begin(), preds_[v].end(),
                       [&](int u) { return Has(ideal, u); });
  }

  // Every ideal J ⊋ ideals_[i], the block J \ I charged to one more
  // accelerator or CPU.
  void Extend(int i, size_t per) {
    const Bits& base = ideals_[i];
    std::unordered_map<Bits, bool, BitsHash> seen;
    std::vector<Bits> stack = {base};
    while (!stack.empty()) {
      Bits cur = std::move(stack.back());
      stack.pop_back();
      for (int v = 0; v < n_; ++v) {
        if (Has(cur, v) || !Ready(cur, v)) continue;
        Bits next = cur;
        Set(next, v);
        if (!seen.emplace(next, true).second) continue;
        if (++blocks_ > o_.max_blocks) return;
        const Block b = BlockOf(base, next);
        // Sizes only grow: a block too big for an accelerator can still
        // go to a CPU, so keep extending.
        Relax(i, index_.at(next), b, per);
        stack.push_back(std::move(next));
      }
    }
  }

  struct Block {
    double accelerator = 0, cpu = 0;
    bool accelerator_ok = true, colors_ok = true;
  };

  Block BlockOf(const Bits& base, const Bits& with) const {
    Block b;
    int64_t size = 0;
    std::unordered_map<int64_t, int> colors;
    for (int v = 0; v < n_; ++v) {
      if (!Has(with, v) || Has(base, v)) continue;
      const MaxLoadNode& node = p_.nodes[v];
      b.cpu += node.cpu_time;
      b.accelerator += node.accelerator_time;
      size += node.size;
      if (!node.on_accelerator) b.accelerator_ok = false;
      if (node.color >= 0) ++colors[node.color];
      // Sends its output once if any successor is elsewhere.
      const bool sends =
          std::any_of(succs_[v].begin(), succs_[v].end(),
                      [&](int w) { return !Has(with, w) || Has(base, w); });
      if (sends) b.accelerator += out_cost_[v];
    }
    // Receives each outside predecessor's output once.
    std::vector<char> charged(n_, 0);
    for (int v = 0; v < n_; ++v) {
      if (!Has(with, v) || Has(base, v)) continue;
      for (const int u : preds_[v]) {
        if (Has(base, u) && !charged[u]) {
          charged[u] = 1;
          b.accelerator += out_cost_[u];
        }
      }
    }
    if (size > p_.accelerator_memory) b.accelerator_ok = false;
    for (const auto& [color, count] : colors) {
      if (count != color_total_.at(color)) b.colors_ok = false;
    }
    return b;
  }

  void Relax(int i, int j, const Block& b, size_t per) {
    if (!b.colors_ok) return;
    const int k = p_.accelerators, cpus = p_.cpus;
    for (int a = 0; a <= k; ++a) {
      for (int c = 0; c <= cpus; ++c) {
        const size_t s = static_cast<size_t>(a) * (cpus + 1) + c;
        const double f = best_[per * i + s];
        if (f == kInf) continue;
        if (a < k && b.accelerator_ok) {
          Improve(i, s, j, s + (cpus + 1), std::max(f, b.accelerator), per);
        }
        if (c < cpus) Improve(i, s, j, s + 1, std::max(f, b.cpu), per);
      }
    }
  }

  void Improve(int i, size_t s, int j, size_t t, double value, size_t per) {
    if (value < best_[per * j + t]) {
      best_[per * j + t] = value;
      from_[per * j + t] = {i, static_cast<int>(s)};
    }
  }

  const MaxLoadProblem& p_;
  const MaxLoadDpOptions& o_;
  int n_ = 0, words_ = 0;
  std::vector<std::vector<int>> preds_, succs_;
  std::vector<double> out_cost_;
  std::unordered_map<int64_t, int> color_total_;
  int64_t blocks_ = 0;  // blocks tried
  std::vector<Bits> ideals_;
  std::unordered_map<Bits, int, BitsHash> index_;
  std::vector<double> best_;               // per (ideal, a, c)
  std::vector<std::pair<int, int>> from_;  // (ideal, state) it came from
};

}  // namespace

Result<MaxLoadDpResult> SolveContiguousMaxLoad(const MaxLoadProblem& p,
                                               const MaxLoadDpOptions& o) {
  if (p.accelerators < 0 || p.cpus < 0 || p.accelerators + p.cpus == 0) {
    return BadInput(p.source + ": no device to place on");
  }
  return Dp(p, o).Run();
}

}  // namespace tessera::placer
