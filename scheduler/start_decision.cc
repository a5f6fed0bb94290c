// DecideStart: the forecast of each option and the choice by predicted
// finish; CapacityFreesAt; the decision's text and JSON.
#include "scheduler/start_decision.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace tessera::scheduler {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Ties go to the fraction the scorer chose (it packs; a GPU of its own
// would spread), then whole, split, the waits.
int OptionOrder(StartOption o) {
  return o == StartOption::kFraction ? -1 : static_cast<int>(o);
}

// "+1h05m", "+14m05s", "+42s"; "never" for infinity.
std::string Relative(double seconds) {
  if (!std::isfinite(seconds)) return "never";
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char text[48];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "+%lldh%02lldm",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else if (s >= 60) {
    std::snprintf(text, sizeof text, "+%lldm%02llds",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof text, "+%llds", static_cast<long long>(s));
  }
  return text;
}

// Jobs sharing one GPU, replayed on their work: each progresses at its
// speed x InterferenceRate with as many jobs as are left on the GPU.
struct GpuJob {
  double work = 0;  // seconds at rate 1; infinity: never ends
  double busy = 0, speed = 1;
};
// The replay: each job's finish, and the piecewise-constant rates between
// events, from which the work done by any time follows exactly.
struct GpuReplay {
  std::vector<double> finish;  // absolute; infinity if never
  std::vector<double> times;   // segment starts (the first is `now`)
  std::vector<std::vector<double>> done, rate;  // per segment, per job
  // Job i's work done by time `t` (t >= the first segment's start).
  double DoneAt(size_t i, double t) const {
    size_t e = 0;
    while (e + 1 < times.size() && times[e + 1] <= t) ++e;
    return done[e][i] + rate[e][i] * (t - times[e]);
  }
};
GpuReplay ReplayGpu(const std::vector<GpuJob>& jobs, const InterferenceLaw& law,
                    double now) {
  GpuReplay out;
  out.finish.assign(jobs.size(), kInf);
  std::vector<double> left, done(jobs.size(), 0);
  for (const GpuJob& j : jobs) left.push_back(j.work);
  double t = now;
  while (true) {
    int k = 0;
    for (size_t i = 0; i < jobs.size(); ++i)
      k += std::isfinite(out.finish[i]) ? 0 : 1;
    std::vector<double> rate(jobs.size(), 0);
    double dt = kInf;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (std::isfinite(out.finish[i])) continue;
      rate[i] = jobs[i].speed * InterferenceRate(law, jobs[i].busy, k);
      dt = std::min(dt, left[i] / rate[i]);
    }
    out.times.push_back(t);
    out.done.push_back(done);
    out.rate.push_back(rate);
    // Done: nobody is left, or only jobs that never end (they keep the
    // last segment's rates for ever).
    if (k == 0 || !std::isfinite(dt)) break;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (std::isfinite(out.finish[i])) continue;
      left[i] -= rate[i] * dt;
      done[i] += rate[i] * dt;
      if (left[i] <= 1e-9 * std::max(1.0, jobs[i].work)) out.finish[i] = t + dt;
    }
    t += dt;
  }
  return out;
}

OptionForecast ForecastNow(const StartRequest& r, const StartCandidate& c,
                           const ClusterState& state,
                           const std::function<Occupant(JobId)>& occupant) {
  OptionForecast f;
  f.option = c.option;
  f.allocation = c.allocation;
  f.start_s = r.now;
  f.speed = std::clamp(c.speed, 1e-6, 1.0);
  f.finish_s = r.now;
  // Each GPU it would use, replayed with it and without it: its finish is
  // the latest over its GPUs (a split's stages wait for the slowest), each
  // co-runner's delay its latest finish with it against without it.
  std::map<JobId, double> delay;
  double gained_work = 0;  // seconds of work, over its GPUs
  for (const GpuShare& s : c.allocation.gpus) {
    const std::vector<JobId> on = state.JobsOn(s.gpu);
    const int k = static_cast<int>(on.size());
    if (k > f.sharing_with) {
      f.sharing_with = k;
      f.slowdown = 1 / InterferenceRate(r.law, r.busy_fraction, k + 1);
    }
    std::vector<GpuJob> jobs;
    for (const JobId id : on) {
      const Occupant o = occupant ? occupant(id) : Occupant{};
      // Its work left, at the rate it runs at now.
      jobs.push_back(
          {o.remaining_s * InterferenceRate(r.law, o.busy_fraction, k),
           o.busy_fraction, 1.0});
    }
    jobs.push_back({r.work_s, r.busy_fraction, f.speed});
    const GpuReplay with = ReplayGpu(jobs, r.law, r.now);
    const double end = with.finish.back();
    f.finish_s = std::max(f.finish_s, end);
    if (!r.charge_others) continue;
    if (k == 0) {
      // An idle GPU: a job of the backlog would run alone at full speed.
      gained_work +=
          (with.finish.back() - r.now) *
          (f.speed / static_cast<double>(c.allocation.gpus.size()) - 1);
      continue;
    }
    jobs.pop_back();
    const GpuReplay without = ReplayGpu(jobs, r.law, r.now);
    // The GPU's work over its stay, against without it: the co-runners
    // alone, then (once they are gone) a job of the backlog at full speed.
    double last = r.now;
    for (size_t i = 0; i < on.size(); ++i) {
      last = std::max(last, std::min(end, without.finish[i]));
    }
    // A split's parts share its work: each GPU does its part of it.
    const double parts = static_cast<double>(c.allocation.gpus.size());
    gained_work += r.work_s / parts - (end - last);
    for (size_t i = 0; i < on.size(); ++i) {
      const double lost = without.DoneAt(i, end) - with.DoneAt(i, end);
      gained_work -= lost;
      double d = 0;
      if (std::isfinite(without.finish[i])) {
        d = with.finish[i] - without.finish[i];
      } else {
        // Endless: the work it lost, at the rate it runs at now.
        d = lost / InterferenceRate(r.law, jobs[i].busy, k);
      }
      delay[on[i]] = std::max(delay[on[i]], d);
    }
  }
  for (const auto& [id, d] : delay) f.cost_to_others_s += std::max(0.0, d);
  if (r.charge_others) {
    // The work its GPUs do while it runs, against what they would do
    // without it with the backlog filling them: what starting it now adds
    // to (or takes from) the cluster's throughput.
    f.gained_work_s = gained_work;
    f.cost_to_others_s -= r.backlog_per_gpu * f.gained_work_s;
  }
  return f;
}

}  // namespace

std::string InterferenceName(const InterferenceLaw& law) {
  if (law.alpha) {
    char text[48];
    std::snprintf(text, sizeof text, "alpha %.2f", *law.alpha);
    return text;
  }
  return "measured (" + std::string(estimator::GpuSharingName(law.sharing)) +
         ")";
}

double InterferenceRate(double alpha, int k) {
  return 1.0 / (1.0 + alpha * static_cast<double>(std::max(0, k - 1)));
}

double InterferenceRate(const InterferenceLaw& law, double busy_fraction,
                        int k) {
  if (law.alpha) return InterferenceRate(*law.alpha, k);
  return 1.0 / estimator::CoLocationSlowdown(law.sharing, busy_fraction, k);
}

std::string_view StartOptionName(StartOption o) {
  switch (o) {
    case StartOption::kWhole:
      return "whole";
    case StartOption::kFraction:
      return "fraction";
    case StartOption::kSplit:
      return "split";
    case StartOption::kWait:
      return "wait";
    case StartOption::kWaitFraction:
      return "wait-fraction";
  }
  return "?";
}

double SquaredCv(const std::vector<double>& work) {
  if (work.size() < 2) return 0;
  double sum = 0, squares = 0;
  for (const double w : work) sum += w;
  const double mean = sum / static_cast<double>(work.size());
  if (!(mean > 0)) return 0;
  for (const double w : work) squares += (w - mean) * (w - mean);
  return squares / static_cast<double>(work.size()) / (mean * mean);
}

StartDecision DecideStart(const StartRequest& request,
                          const ClusterState& state,
                          const std::function<Occupant(JobId)>& occupant) {
  StartDecision d;
  d.work_s = std::max(0.0, request.work_s);
  StartRequest r = request;
  r.work_s = d.work_s;
  if (r.gang_queued) {
    r.backlog_per_gpu = 0;
    r.held_back = 0;
    r.work_cv2 = 0;
  }
  for (const StartCandidate& c : r.candidates) {
    if (c.allocation.gpus.empty()) continue;
    d.options.push_back(ForecastNow(r, c, state, occupant));
  }
  // Whether starting now adds to the cluster's throughput; where it
  // neither adds nor takes (up to rounding), sharing still pays when the
  // jobs' work varies more than exponentially (processor sharing beats
  // first-come-first-served exactly when the squared coefficient of
  // variation of the work exceeds 1).
  const double tolerance = 1e-6 * std::max(1.0, d.work_s);
  const bool gains = std::any_of(
      d.options.begin(), d.options.end(), [&](const OptionForecast& o) {
        return o.gained_work_s > tolerance ||
               (o.gained_work_s >= -tolerance && r.work_cv2 > 1);
      });
  for (const auto& [option, opening] :
       {std::pair(StartOption::kWait, r.whole),
        std::pair(StartOption::kWaitFraction, r.fraction)}) {
    if (!std::isfinite(opening.at)) continue;
    OptionForecast wait;
    wait.option = option;
    wait.start_s = std::max(r.now, opening.at);
    wait.speed = option == StartOption::kWait
                     ? std::clamp(r.wait_speed, 1e-6, 1.0)
                     : 1.0;
    wait.sharing_with = opening.sharing_with;
    wait.slowdown =
        1 / InterferenceRate(r.law, r.busy_fraction, opening.sharing_with + 1);
    wait.finish_s = wait.start_s + d.work_s * wait.slowdown / wait.speed;
    if (r.charge_others && gains) {
      // Its wait holds back the jobs behind it that would start now.
      wait.cost_to_others_s = (wait.start_s - r.now) * r.held_back;
    }
    d.options.push_back(wait);
  }
  for (size_t i = 0; i < d.options.size(); ++i) {
    if (d.chosen < 0) {
      d.chosen = static_cast<int>(i);
      continue;
    }
    const OptionForecast& a = d.options[i];
    const OptionForecast& b = d.options[static_cast<size_t>(d.chosen)];
    // Scores within a millisecond-per-hour are a tie.
    const double eps = 1e-9 * std::max(1.0, std::abs(b.score()));
    const bool better = a.score() < b.score() - eps ||
                        (a.score() <= b.score() + eps &&
                         (a.start_s < b.start_s ||
                          (a.start_s == b.start_s &&
                           OptionOrder(a.option) < OptionOrder(b.option))));
    if (better) d.chosen = static_cast<int>(i);
  }
  return d;
}

StartRequest BuildStartRequest(const ClusterState& s, StartInputs in) {
  StartRequest r;
  r.now = in.now;
  r.work_s = in.work_s;
  r.busy_fraction = in.busy_fraction;
  r.law = in.law;
  r.candidates = std::move(in.candidates);
  const bool whole_now = std::any_of(
      r.candidates.begin(), r.candidates.end(),
      [](const StartCandidate& c) { return c.option == StartOption::kWhole; });
  const bool single_now = std::any_of(
      r.candidates.begin(), r.candidates.end(),
      [](const StartCandidate& c) { return c.option != StartOption::kSplit; });
  const auto later = [&](StartRequest::Opening o) {
    return o.at <= in.now ? StartRequest::Opening{} : o;
  };
  if (!whole_now) {
    r.whole = later(CapacityFreesAt(s, in.pool, in.whole_gpus, kFullGpuMilli,
                                    in.whole_memory_mib, in.now, in.ends_at));
  }
  if (!single_now && in.fraction_wait) {
    r.fraction =
        later(CapacityFreesAt(s, in.pool, 1, in.fraction_milli,
                              in.fraction_memory_mib, in.now, in.ends_at));
  }
  r.held_back = in.held_back;
  r.backlog_per_gpu =
      static_cast<double>(in.held_back) / std::max(1, in.pool_gpus);
  r.work_cv2 = in.work_cv2;
  r.gang_queued = in.gang_queued;
  return r;
}

StartRequest::Opening CapacityFreesAt(
    const ClusterState& state, std::string_view pool, int gpus, int milli,
    int64_t memory_mib, double now,
    const std::function<double(JobId)>& ends_at) {
  const Topology& t = state.topology();
  const std::vector<std::vector<JobId>> by_gpu = state.JobsByGpu();
  StartRequest::Opening best;
  const int want = std::max(1, gpus);
  for (const NodeInfo& node : t.nodes) {
    if (node.pool != pool || node.drained) continue;
    std::vector<std::pair<double, int>> frees;  // (when, jobs still there)
    for (const int g : node.gpus) {
      const GpuInfo& info = t.gpus[static_cast<size_t>(g)];
      if (info.memory_mib < memory_mib) continue;
      // Its jobs by end; each leaving frees what it holds here.
      std::vector<std::pair<double, JobId>> ends;
      for (const JobId id : by_gpu[static_cast<size_t>(g)]) {
        ends.emplace_back(std::max(now, ends_at ? ends_at(id) : kInf), id);
      }
      std::sort(ends.begin(), ends.end());
      int64_t free_mib = state.free_memory_mib(g);
      int free_milli = state.free_milli(g);
      double at = now;
      size_t left = 0;
      while ((free_mib < memory_mib || free_milli < milli) &&
             left < ends.size()) {
        const Allocation* a = state.AllocationOf(ends[left].second);
        if (state.exclusive(g)) {
          // Its one holder (whole GPUs, or a fraction of a GPU that is not
          // shareable) had all of it: all of it frees.
          free_mib = info.memory_mib;
          free_milli = kFullGpuMilli;
        } else {
          for (const GpuShare& s : a ? a->gpus : std::vector<GpuShare>{}) {
            if (s.gpu != g) continue;
            free_mib += s.memory_mib;
            free_milli += s.milli;
          }
        }
        at = ends[left].first;
        ++left;
      }
      if (free_mib < memory_mib || free_milli < milli) continue;
      frees.emplace_back(at, static_cast<int>(ends.size() - left));
    }
    if (static_cast<int>(frees.size()) < want) continue;
    std::sort(frees.begin(), frees.end());
    const double at = frees[static_cast<size_t>(want - 1)].first;
    int sharing = 0;
    for (int i = 0; i < want; ++i) {
      sharing = std::max(sharing, frees[static_cast<size_t>(i)].second);
    }
    if (at < best.at) best = {at, sharing};
  }
  return best;
}

std::string DescribeGpus(const Topology& t, const Allocation& a) {
  std::string out;
  std::string node;
  for (const GpuShare& s : a.gpus) {
    const std::string& id = t.gpus[static_cast<size_t>(s.gpu)].id;
    const size_t slash = id.find('/');
    const std::string n = slash == std::string::npos ? "" : id.substr(0, slash);
    const std::string g =
        slash == std::string::npos ? id : id.substr(slash + 1);
    if (out.empty()) {
      out = id;
    } else if (n == node) {
      out += "+" + g;
    } else {
      out += "," + id;
    }
    node = n;
  }
  return out;
}

std::string DescribeDecision(const StartDecision& d, const Topology& t,
                             double now) {
  std::string out;
  for (const OptionForecast& o : d.options) {
    if (!out.empty()) out += "; ";
    switch (o.option) {
      case StartOption::kWait:
        out += "whole capacity frees " + Relative(o.start_s - now);
        break;
      case StartOption::kWaitFraction:
        out += "a fraction frees " + Relative(o.start_s - now);
        break;
      case StartOption::kWhole:
        out += "whole " + DescribeGpus(t, *o.allocation) + " now";
        break;
      case StartOption::kFraction:
        out += "fraction of " + DescribeGpus(t, *o.allocation) + " now";
        break;
      case StartOption::kSplit:
        out += "split over " + DescribeGpus(t, *o.allocation) + " now";
        break;
    }
    out += ": ends " + Relative(o.finish_s - now);
    if (o.sharing_with > 0) {
      char text[96];
      std::snprintf(text, sizeof text, " (beside %d job%s, x%.2f slower",
                    o.sharing_with, o.sharing_with == 1 ? "" : "s", o.slowdown);
      out += text;
      if (o.cost_to_others_s > 0) {
        out += ", delays them " + Relative(o.cost_to_others_s).substr(1) +
               " in all";
      }
      out += ")";
    }
  }
  if (const OptionForecast* c = d.Chosen()) {
    out +=
        std::string(" -> ") + (c->option == StartOption::kWait ||
                                       c->option == StartOption::kWaitFraction
                                   ? "waiting"
                                   : std::string(StartOptionName(c->option)));
  } else {
    out += out.empty() ? "nothing fits, ever" : "";
  }
  return out;
}

nlohmann::json DecisionJson(const StartDecision& d, const Topology& t) {
  nlohmann::json options = nlohmann::json::array();
  for (const OptionForecast& o : d.options) {
    nlohmann::json j = {{"option", StartOptionName(o.option)},
                        {"start_s", o.start_s},
                        {"finish_s", o.finish_s},
                        {"speed", o.speed},
                        {"slowdown", o.slowdown},
                        {"sharing_with", o.sharing_with},
                        {"cost_to_others_s", o.cost_to_others_s}};
    j["where"] = o.allocation ? DescribeGpus(t, *o.allocation) : "";
    options.push_back(std::move(j));
  }
  const OptionForecast* c = d.Chosen();
  return {{"work_s", d.work_s},
          {"chosen", c ? nlohmann::json(StartOptionName(c->option))
                       : nlohmann::json(nullptr)},
          {"options", std::move(options)}};
}

}  // namespace tessera::scheduler
