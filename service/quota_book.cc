// The service's quota part (quota_book_internal.h): what users and teams
// hold, whether a submission or a start stays within their quotas, the
// submission rates' token buckets.
#include "service/quota_book_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "scheduler/queue_tree.h"
#include "scheduler/round.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::GpuShare;

bool Quotas::empty() const {
  const auto unset = [](const Quota& q) {
    return !q.max_queued && !q.max_running && !q.max_gpu_milli &&
           !q.max_gpu_memory_mib && !q.submissions_per_s;
  };
  return unset(user_default) &&
         std::ranges::all_of(users,
                             [&](const auto& u) { return unset(u.second); }) &&
         std::ranges::all_of(teams,
                             [&](const auto& t) { return unset(t.second); });
}

namespace service_internal {

Quota UserQuota(const Quotas& quotas, const std::string& user) {
  Quota q = quotas.user_default;
  auto it = quotas.users.find(user);
  if (it == quotas.users.end()) return q;
  const Quota& own = it->second;
  if (own.max_queued) q.max_queued = own.max_queued;
  if (own.max_running) q.max_running = own.max_running;
  if (own.max_gpu_milli) q.max_gpu_milli = own.max_gpu_milli;
  if (own.max_gpu_memory_mib) q.max_gpu_memory_mib = own.max_gpu_memory_mib;
  if (own.submissions_per_s) q.submissions_per_s = own.submissions_per_s;
  if (own.burst) q.burst = own.burst;
  return q;
}

const Quota* TeamQuota(const Quotas& quotas, const std::string& team) {
  if (team.empty()) return nullptr;
  auto it = quotas.teams.find(team);
  return it == quotas.teams.end() ? nullptr : &it->second;
}

QuotaUse HeldBy(const Allocation& a) {
  const scheduler::QueueAmount held = scheduler::HeldAmount(a);
  return {0, 1, held.gpu_milli, held.gpu_memory_mib};
}

QuotaUse EstimateHeld(const Job& job, const Topology& t) {
  const scheduler::QueueAmount held =
      scheduler::QueuedAmount(job.demand, t, job.request.pool);
  return {0, 1, held.gpu_milli, held.gpu_memory_mib};
}

std::string OverQuota(const Quota& q, const QuotaUse& now, const QuotaUse& plus,
                      const std::string& who) {
  const auto over = [&](const std::optional<int64_t>& limit, int64_t held,
                        int64_t more, const char* what,
                        const char* unit) -> std::string {
    if (!limit || more <= 0 || held + more <= *limit) return "";
    return who + " holds " + std::to_string(held) + unit + " " + what +
           " of its quota's " + std::to_string(*limit) + unit;
  };
  for (std::string why :
       {over(q.max_running, now.running, plus.running, "running jobs", ""),
        over(q.max_gpu_milli, now.gpu_milli, plus.gpu_milli, "GPU milli", ""),
        over(q.max_gpu_memory_mib, now.gpu_memory_mib, plus.gpu_memory_mib,
             "GPU memory", " MiB")}) {
    if (!why.empty()) return why;
  }
  return "";
}

void Holdings::Add(const Job& j, const QuotaUse& u) {
  for (QuotaUse* use :
       {&users[j.user], j.team.empty() ? nullptr : &teams[j.team]}) {
    if (!use) continue;
    use->running += u.running;
    use->gpu_milli += u.gpu_milli;
    use->gpu_memory_mib += u.gpu_memory_mib;
  }
}

std::string Holdings::Over(const Quotas& q, const Job& j,
                           const QuotaUse& plus) {
  std::string why = OverQuota(UserQuota(q, j.user), users[j.user], plus,
                              "user '" + j.user + "'");
  if (!why.empty()) return why;
  if (const Quota* team = TeamQuota(q, j.team)) {
    return OverQuota(*team, teams[j.team], plus, "team '" + j.team + "'");
  }
  return "";
}

Holdings QuotaBook::Held(const JobTable& jobs) {
  Holdings held;
  for (const auto& [id, j] : jobs.running) held.Add(j, HeldBy(j.allocation));
  for (const auto& [id, j] : jobs.starting) held.Add(j, HeldBy(j.allocation));
  return held;
}

namespace {

std::string FormatRate(double rate) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", rate);
  return buf;
}

}  // namespace

Status QuotaBook::Admit(const User& user, const std::vector<Job>& queue,
                        double now) {
  const Quota mine = UserQuota(quotas_, user.name);
  struct Check {
    const Quota* quota;
    std::map<std::string, TokenBucket>* buckets;
    std::string key, who;
  };
  const Quota* team = TeamQuota(quotas_, user.team);
  const Check checks[] = {
      {&mine, &user_buckets_, user.name, "user '" + user.name + "'"},
      {team, &team_buckets_, user.team, "team '" + user.team + "'"}};
  // Rates first: every attempt counts, accepted or not.
  for (const Check& c : checks) {
    if (!c.quota || !c.quota->submissions_per_s) continue;
    const double rate = *c.quota->submissions_per_s;
    const double burst = static_cast<double>(
        c.quota->burst.value_or(std::max<int64_t>(1, std::llround(2 * rate))));
    TokenBucket& b = (*c.buckets)[c.key];
    if (b.at == 0) b.tokens = burst;
    b.tokens = std::min(burst, b.tokens + (now - b.at) * rate);
    b.at = now;
    if (b.tokens < 1) {
      const double wait = (1 - b.tokens) / rate;
      return RateLimited(c.who + " submits faster than its quota's " +
                             FormatRate(rate) + " submissions per second",
                         wait);
    }
    b.tokens -= 1;
  }
  int64_t user_queued = 0, team_queued = 0;
  for (const Job& j : queue) {
    user_queued += j.user == user.name;
    team_queued += !user.team.empty() && j.team == user.team;
  }
  const int64_t user_limit =
      std::min(max_queued_per_user_, mine.max_queued.value_or(INT64_MAX));
  if (user_queued >= user_limit) {
    return BadInput(
        "user '" + user.name + "' already has " + std::to_string(user_queued) +
        " queued jobs (the limit is " + std::to_string(user_limit) + ")");
  }
  if (team && team->max_queued && team_queued >= *team->max_queued) {
    return BadInput("team '" + user.team + "' already has " +
                    std::to_string(team_queued) +
                    " queued jobs (the limit is " +
                    std::to_string(*team->max_queued) + ")");
  }
  return {};
}

nlohmann::json QuotaBook::Json(const JobTable& jobs) const {
  std::map<std::string, QuotaUse> users, teams;
  std::map<std::string, std::string> team_of;
  const auto add = [&](const Job& j, bool queued) {
    for (auto* use :
         {&users[j.user], j.team.empty() ? nullptr : &teams[j.team]}) {
      if (!use) continue;
      if (queued) {
        use->queued++;
      } else {
        const QuotaUse h = HeldBy(j.allocation);
        use->running += 1;
        use->gpu_milli += h.gpu_milli;
        use->gpu_memory_mib += h.gpu_memory_mib;
      }
    }
    if (!j.team.empty()) team_of[j.user] = j.team;
  };
  for (const Job& j : jobs.queue) add(j, true);
  for (const auto& [id, j] : jobs.starting) add(j, false);
  for (const auto& [id, j] : jobs.running) add(j, false);
  for (const auto& [name, q] : quotas_.users) users[name];
  for (const auto& [name, q] : quotas_.teams) teams[name];
  const auto limit = [](const std::optional<int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  const auto entry = [&](const std::string& name, const QuotaUse& u,
                         const Quota& q) {
    return nlohmann::json{
        {"name", name},
        {"queued", u.queued},
        {"running", u.running},
        {"gpu_milli", u.gpu_milli},
        {"gpu_memory_mib", u.gpu_memory_mib},
        {"quota",
         {{"max_queued", limit(q.max_queued)},
          {"max_running", limit(q.max_running)},
          {"max_gpu_milli", limit(q.max_gpu_milli)},
          {"max_gpu_memory_mib", limit(q.max_gpu_memory_mib)},
          {"submissions_per_s", q.submissions_per_s
                                    ? nlohmann::json(*q.submissions_per_s)
                                    : nlohmann::json()}}}};
  };
  nlohmann::json out = {{"users", nlohmann::json::array()},
                        {"teams", nlohmann::json::array()}};
  for (const auto& [name, u] : users) {
    Quota q = UserQuota(quotas_, name);
    if (!q.max_queued) q.max_queued = max_queued_per_user_;
    nlohmann::json e = entry(name, u, q);
    e["team"] = team_of.count(name) ? team_of[name] : "";
    out["users"].push_back(std::move(e));
  }
  for (const auto& [name, u] : teams) {
    const Quota* q = TeamQuota(quotas_, name);
    out["teams"].push_back(entry(name, u, q ? *q : Quota{}));
  }
  return out;
}

}  // namespace service_internal
}  // namespace tessera::service
