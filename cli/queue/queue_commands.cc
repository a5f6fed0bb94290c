// The queue service's client commands over cpp-httplib's client (submit is in
// submit.cc). The service's JSON (docs/http_api.md) is printed as is with
// --json, and as tables for people otherwise.

#include "cli/queue/queue_commands.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "cli/queue/queue_client_internal.h"
#include "client/queue_client.h"
#include "common/result.h"

namespace tessera::cli {
namespace {

using nlohmann::json;

// `tessera logs --follow` asks for more this often.
constexpr auto kFollowInterval = std::chrono::milliseconds(500);

// ---- Formatting ----------------------------------------------------------

std::string GiB(int64_t mib) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fGiB", static_cast<double>(mib) / 1024);
  return buf;
}

// "2026-11-22T23:04:05Z" (or seconds since the epoch) -> seconds; 0 when
// absent or unreadable.
double Seconds(const json& j, const char* key) {
  if (!j.contains(key)) return 0;
  const json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return 0;
  std::tm tm{};
  const std::string text = v.get<std::string>();
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm));
}

double Now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "45s", "12m03s", "3h07m", "2d04h".
std::string Duration(double seconds) {
  const auto s = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh",
                  static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600));
  }
  return buf;
}

// How long the job waited and has run (or ran); "-" where it does not apply.
std::pair<std::string, std::string> Times(const json& job) {
  const double submitted = Seconds(job, "submitted_at");
  const double started = Seconds(job, "started_at");
  const double finished = Seconds(job, "finished_at");
  const double now = Now();
  std::string waited = "-";
  std::string ran = "-";
  if (submitted > 0) {
    const double until = started > 0 ? started : finished > 0 ? finished : now;
    waited = Duration(until - submitted);
  }
  if (started > 0) ran = Duration((finished > 0 ? finished : now) - started);
  return {waited, ran};
}

// "node0/gpu1 250m 8.0GiB, node0/gpu2 ...".
std::string Allocation(const json& job) {
  std::string out;
  if (!job.contains("allocation") || !job["allocation"].is_array()) return out;
  for (const json& g : job["allocation"]) {
    out += (out.empty() ? "" : ", ") + Str(g, "gpu") + " " +
           std::to_string(Int(g, "gpu_milli")) + "m " +
           GiB(Int(g, "gpu_memory_mib"));
  }
  return out;
}

std::string Demand(const json& d) {
  std::string out;
  if (Int(d, "gpus") > 0) {
    out = std::to_string(Int(d, "gpus")) + " whole GPU(s)";
  } else {
    out = std::to_string(Int(d, "gpu_milli")) + "m of a GPU, " +
          GiB(Int(d, "gpu_memory_mib"));
  }
  if (Int(d, "cpu_milli") > 0) {
    out += ", CPU " + std::to_string(Int(d, "cpu_milli")) + "m";
  }
  if (Int(d, "memory_mib") > 0) out += ", memory " + GiB(Int(d, "memory_mib"));
  return out;
}

// "14:05" (local time) for a Unix time today, "Nov 27 14:05" otherwise.
std::string ClockTime(double unix_s) {
  if (!std::isfinite(unix_s)) return "never";
  const auto t = static_cast<std::time_t>(std::llround(unix_s));
  const std::time_t now = std::time(nullptr);
  std::tm when{}, today{};
  localtime_r(&t, &when);
  localtime_r(&now, &today);
  char text[32];
  const bool same_day =
      when.tm_year == today.tm_year && when.tm_yday == today.tm_yday;
  std::strftime(text, sizeof text, same_day ? "%H:%M" : "%b %d %H:%M", &when);
  return text;
}

// The split-or-wait decision: each option with its predicted end, the
// chosen one marked.
void PrintDecision(const json& d, bool queued) {
  const std::string chosen = Str(d, "chosen");
  std::cout << "decision (work " << HumanDuration(d.value("work_s", 0.0))
            << " on a whole GPU, from " << Str(d, "work_from")
            << "; interference " << Str(d, "interference") << "):\n";
  bool marked = false;
  for (const json& o : d.value("options", json::array())) {
    const std::string option = Str(o, "option");
    std::string line;
    if (option == "wait") {
      line = "a whole GPU frees ~ " + ClockTime(o.value("start_s", 0.0));
    } else if (option == "wait-fraction") {
      line = "a fraction frees ~ " + ClockTime(o.value("start_s", 0.0));
    } else {
      const std::string what = option == "whole"      ? "whole GPU "
                               : option == "fraction" ? "fraction of "
                                                      : "split over ";
      line = what + Str(o, "where") + " now";
    }
    line += ": ends ~ " + ClockTime(o.value("finish_s", 0.0));
    const int64_t beside = Int(o, "sharing_with");
    if (beside > 0) {
      line += " (beside " + std::to_string(beside) + " job" +
              (beside == 1 ? "" : "s") + ", x" +
              Fixed(o.value("slowdown", 1.0), 2) + " slower)";
    }
    const bool is_chosen = !marked && option == chosen;
    marked = marked || is_chosen;
    std::cout << (is_chosen ? "  * " : "    ") << line << "\n";
  }
  if (chosen.empty()) {
    std::cout << "  -> nothing fits now or later\n";
  } else {
    std::cout << "  -> "
              << (chosen == "wait" || chosen == "wait-fraction"
                      ? "waiting"
                      : "start: " + chosen)
              << (queued ? " (re-taken every round while it waits)"
                         : " (the decision it started under)")
              << "\n";
  }
}

// "reserved 8.0 GiB, used at most 6.1 GiB (now 5.9 GiB), GPU busy 71%",
// from what the service measured of this run; "" before any reading.
std::string GpuUse(const json& job) {
  if (!job.contains("usage") || !job["usage"].is_object()) return "";
  const json& u = job["usage"];
  int64_t reserved = 0;
  for (const json& a : job.value("allocation", json::array())) {
    reserved += Int(a, "gpu_memory_mib");
  }
  char busy[32];
  std::snprintf(busy, sizeof busy, "%.0f%%",
                u.value("mean_utilization_pct", 0.0));
  std::string out;
  if (reserved > 0) out = "reserved " + GiB(reserved) + ", ";
  return out + "used at most " + GiB(Int(u, "peak_mib")) + " (now " +
         GiB(Int(u, "last_mib")) + "), GPU busy " + busy + " over " +
         Str(u, "readings") + " reading(s)";
}

void PrintJob(const json& job) {
  const auto [waited, ran] = Times(job);
  std::string command;
  if (job.contains("request") && job["request"].contains("command")) {
    for (const json& arg : job["request"]["command"]) {
      command += (command.empty() ? "" : " ") +
                 (arg.is_string() ? arg.get<std::string>() : arg.dump());
    }
  }
  std::cout << "job " << Int(job, "id")
            << (Str(job, "name").empty() ? "" : ": " + Str(job, "name"))
            << "\n";
  TextTable table({"", ""});
  auto row = [&](const std::string& key, const std::string& value) {
    if (!value.empty()) table.AddRow({key, value});
  };
  row("user", Str(job, "user"));
  row("pool", Str(job, "pool"));
  row("state", Str(job, "state"));
  row("reason", Str(job, "reason"));
  row("exit code", Str(job, "exit_code"));
  row("priority", Str(job, "priority"));
  row("submitted", Str(job, "submitted_at"));
  row("started", Str(job, "started_at"));
  row("finished", Str(job, "finished_at"));
  row("waited", waited == "-" ? "" : waited);
  row("ran", ran == "-" ? "" : ran);
  row("command", command);
  if (job.contains("demand")) row("demand", Demand(job["demand"]));
  row("sized by", Str(job, "sized_by"));
  row("allocation", Allocation(job));
  row("gpu use", GpuUse(job));
  if (Int(job, "oom_requeues") > 0) {
    row("on oom",
        "put back " + Str(job, "oom_requeues") + " time(s) with more memory");
  }
  const bool elastic = job.contains("elastic") && job["elastic"].is_object();
  if (elastic) {
    const json& e = job["elastic"];
    std::string workers;
    for (const json& w : e.value("workers", json::array())) {
      workers += (workers.empty() ? "" : ", ") + Str(w, "worker") + "@" +
                 Str(w, "gpu") + (w.value("guaranteed", false) ? "" : "+");
    }
    row("elastic", Str(e, "min") + ".." + Str(e, "max") + " workers, " +
                       Str(e, "mode") + ", version " + Str(e, "version"));
    row("workers", workers.empty() ? "" : workers + " (+: an extra)");
    if (!e.value("releasing", json::array()).empty()) {
      row("releasing", e["releasing"].dump() + " by " + Str(e, "release_by"));
    }
  }
  if (job.contains("plan") && !job["plan"].is_null()) {
    row("plan", "split over several GPUs (tessera job " +
                    std::to_string(Int(job, "id")) + " --json shows it)");
  }
  std::string rendered = table.Render();
  // The empty header row: drop the table's first line.
  std::cout << rendered.substr(rendered.find('\n') + 1);
  if (elastic && !job["elastic"].value("history", json::array()).empty()) {
    std::cout << "elastic history:\n";
    for (const json& h : job["elastic"]["history"]) {
      std::cout << "  " << Str(h, "at") << "  v" << Str(h, "version") << " "
                << Str(h, "action") << " workers "
                << h.value("workers", json::array()).dump() << "\n";
    }
  }
  if (job.contains("decision") && job["decision"].is_object()) {
    const std::string state = Str(job, "state");
    PrintDecision(job["decision"], state == "queued" || state == "preempted");
  }
}

// Which replica leads, since when, and which one answered (GET
// /v1/cluster's "replica"; docs/operations.md, "High availability"):
// "leader: r2 (http://10.0.0.2:8080) since 2026-11-30T11:24:51Z; this answer
// from r1 (follower, view 0.2 s old)". "" for a service alone.
std::string ReplicaLine(const json& cluster) {
  if (!cluster.contains("replica")) return "";
  const json& r = cluster["replica"];
  if (!r.is_object() || !r.value("replicated", false)) return "";
  std::string line = "leader: ";
  const json& leader = r.contains("leader") ? r["leader"] : json();
  if (leader.is_object()) {
    std::string since = Str(leader, "since");
    if (leader.contains("since") && leader["since"].is_number()) {
      const auto t =
          static_cast<std::time_t>(std::llround(leader["since"].get<double>()));
      std::tm utc{};
      gmtime_r(&t, &utc);
      char text[32];
      std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
      since = text;
    }
    line += Str(leader, "name") + " (" + Str(leader, "address") + ")" +
            (since.empty() ? "" : " since " + since);
  } else {
    line += "none now (a failover under way: one takes over within the lease)";
  }
  line += "; this answer from " + Str(r, "name");
  if (Str(r, "role") == "leader") return line + " (leader)";
  return line + " (follower, view " + Fixed(r.value("view_age_s", 0.0), 1) +
         " s old)";
}

}  // namespace

int RunJobs(const JobsArgs& args) {
  return Run([&]() -> Status {
    client::JobQuery query{args.state, args.user, args.pool,
                           args.limit ? static_cast<int64_t>(*args.limit) : 0};
    Result<json> list = Client(args.client).Jobs(query);
    TESSERA_RETURN_IF_ERROR(list);
    if (args.client.json) {
      PrintJson(*list);
      return {};
    }
    if (!list->contains("jobs") || (*list)["jobs"].empty()) {
      std::cout << "no jobs\n";
      return {};
    }
    TextTable table(
        {"ID", "NAME", "USER", "POOL", "STATE", "GPUS", "WAITED", "RAN"},
        {true, false, false, false, false, false, true, true});
    for (const json& job : (*list)["jobs"]) {
      const auto [waited, ran] = Times(job);
      const std::string gpus = Allocation(job);
      table.AddRow({Str(job, "id"), Str(job, "name"), Str(job, "user"),
                    Str(job, "pool"), Str(job, "state"),
                    gpus.empty() ? "-" : gpus, waited, ran});
    }
    std::cout << table.Render("");
    return {};
  });
}

int RunJob(const JobArgs& args) {
  if (args.events) {
    return Run([&]() -> Status {
      Result<json> events = Client(args.client).Events(args.id);
      TESSERA_RETURN_IF_ERROR(events);
      if (args.client.json) {
        PrintJson(*events);
        return {};
      }
      TextTable table({"AT", "WHO", "WHAT", "DETAIL"});
      for (const json& e : (*events)["events"]) {
        std::string who = Str(e, "actor");
        if (!Str(e, "token").empty()) who += " (token " + Str(e, "token") + ")";
        table.AddRow({Str(e, "at"), who, Str(e, "action"), Str(e, "detail")});
      }
      std::cout << table.Render("");
      return {};
    });
  }
  return Run([&]() -> Status {
    Result<json> job = Client(args.client).Job(args.id);
    TESSERA_RETURN_IF_ERROR(job);
    if (args.client.json) {
      PrintJson(*job);
    } else {
      PrintJob(*job);
    }
    return {};
  });
}

int RunProgress(const ProgressArgs& args) {
  return Run([&]() -> Status {
    if (args.steps < 0) return BadInput("steps: must not be negative");
    Result<json> out = Client(args.client).Progress(args.id, args.steps);
    TESSERA_RETURN_IF_ERROR(out);
    if (args.client.json) {
      PrintJson(*out);
      return {};
    }
    std::cout << "job " << args.id << ": " << args.steps << " steps";
    if (out->contains("step_s")) {
      std::cout << ", " << Fixed((*out)["step_s"].get<double>() * 1e3, 1)
                << " ms per step";
    }
    if (Int(*out, "sharing_with") > 0) {
      std::cout << " beside " << Int(*out, "sharing_with") << " job(s)";
    }
    if (out->contains("slowdown")) {
      std::cout << " (x" << Fixed((*out)["slowdown"].get<double>(), 2)
                << " its step alone)";
    }
    if (out->contains("predicted_end_s")) {
      std::cout << "; ends ~ "
                << ClockTime((*out)["predicted_end_s"].get<double>());
    }
    std::cout << "\n";
    return {};
  });
}

int RunLogs(const LogsArgs& args) {
  return Run([&]() -> Status {
    const client::QueueClient api = Client(args.client);
    int64_t offset = 0;
    while (true) {
      Result<client::LogChunk> chunk =
          api.Logs(args.id, args.stderr_log, offset);
      TESSERA_RETURN_IF_ERROR(chunk);
      std::cout << chunk->text << std::flush;
      offset = chunk->next_offset;
      if (!chunk->text.empty()) continue;  // more may be there already
      if (!args.follow) return {};
      // The state is read before the log: a finished job's log is whole.
      if (client::IsTerminalStateName(chunk->job_state)) return {};
      std::this_thread::sleep_for(kFollowInterval);
    }
  });
}

int RunCancel(const JobArgs& args) {
  return Run([&]() -> Status {
    Result<json> job = Client(args.client).Cancel(args.id);
    TESSERA_RETURN_IF_ERROR(job);
    if (args.client.json) {
      PrintJson(*job);
    } else if (Str(*job, "state") == "running") {
      std::cout << "job " << args.id
                << ": stopping (SIGTERM now, SIGKILL after the grace "
                   "period)\n";
    } else {
      std::cout << "job " << args.id << ": " << Str(*job, "state") << "\n";
    }
    return {};
  });
}

int RunDrain(const DrainArgs& args) {
  return Run([&]() -> Status {
    Result<json> answer = Client(args.client).Drain(args.node, args.undo);
    TESSERA_RETURN_IF_ERROR(answer);
    if (args.client.json) {
      PrintJson(*answer);
    } else {
      std::cout << "node " << args.node
                << (args.undo ? ": admitting jobs again\n"
                              : ": drained (admits nothing new; its running "
                                "jobs continue)\n");
    }
    return {};
  });
}

// The queue tree (docs/quotas.md): per queue, indented under its parent,
// GPU milli and memory guaranteed, used, borrowed beyond the guarantee and
// lent (idle guarantee others borrow now); limit "-" for none.
static void PrintQueues(const json& queues) {
  TextTable t({"QUEUE", "WEIGHT", "GUARANTEED", "LIMIT", "USED", "BORROWED",
               "LENT", "RUNNING", "QUEUED"},
              {false, true, true, true, true, true, true, true, true});
  const auto amount = [](const json& a) {
    const json& m = a["gpu_milli"];
    const json& g = a["gpu_memory_mib"];
    if (m.is_null() && g.is_null()) return std::string("-");
    return (m.is_null() ? std::string("-") : m.dump()) + " milli, " +
           (g.is_null() ? std::string("-") : GiB(g.get<int64_t>()));
  };
  for (const json& q : queues) {
    const int depth = q.value("depth", 1);
    t.AddRow({std::string(2 * std::max(0, depth - 1), ' ') + Str(q, "name"),
              Str(q, "weight"), amount(q["guaranteed"]), amount(q["limit"]),
              amount(q["used"]), amount(q["borrowed"]), amount(q["lent"]),
              Str(q, "running"), Str(q, "queued")});
  }
  std::cout << t.Render("") << "\n";
}

int RunCluster(const ClientArgs& args) {
  return Run([&]() -> Status {
    Result<json> cluster = Client(args).Cluster();
    TESSERA_RETURN_IF_ERROR(cluster);
    if (args.json) {
      PrintJson(*cluster);
      return {};
    }
    if (const std::string replica = ReplicaLine(*cluster); !replica.empty()) {
      std::cout << replica << "\n\n";
    }
    if (cluster->contains("pools")) {
      TextTable pools(
          {"POOL", "POLICY", "GPUS", "QUEUED", "STARTING", "RUNNING"},
          {false, false, true, true, true, true});
      for (const json& p : (*cluster)["pools"]) {
        pools.AddRow({Str(p, "name"), Str(p, "policy"), Str(p, "gpus"),
                      Str(p, "queued"), Str(p, "starting"), Str(p, "running")});
      }
      std::cout << pools.Render("") << "\n";
    }
    // Use against quota, per user and team: "held/limit" ("-": no limit).
    const auto of = [](const json& e, const char* used, const char* limit,
                       bool mib) {
      const json& q = e["quota"][limit];
      const int64_t n = Int(e, used);
      const std::string u = mib ? GiB(n) : std::to_string(n);
      if (q.is_null()) return u;
      return u + "/" + (mib ? GiB(q.get<int64_t>()) : q.dump());
    };
    for (const char* kind : {"users", "teams"}) {
      if (!cluster->contains(kind) || (*cluster)[kind].empty()) continue;
      TextTable t({kind[0] == 'u' ? "USER" : "TEAM", "QUEUED", "RUNNING",
                   "GPU MILLI", "GPU MEMORY", "SUBMIT/S"},
                  {false, true, true, true, true, true});
      for (const json& e : (*cluster)[kind]) {
        const json& rate = e["quota"]["submissions_per_s"];
        t.AddRow({Str(e, "name"), of(e, "queued", "max_queued", false),
                  of(e, "running", "max_running", false),
                  of(e, "gpu_milli", "max_gpu_milli", false),
                  of(e, "gpu_memory_mib", "max_gpu_memory_mib", true),
                  rate.is_null() ? "-" : rate.dump()});
      }
      std::cout << t.Render("") << "\n";
    }
    if (cluster->contains("queues") && !(*cluster)["queues"].empty()) {
      PrintQueues((*cluster)["queues"]);
    }
    if (cluster->contains("quota_waits") &&
        !(*cluster)["quota_waits"].empty()) {
      TextTable w({"WAITING JOB", "HELD BACK BY"}, {true, false});
      for (const json& e : (*cluster)["quota_waits"]) {
        w.AddRow({Str(e, "job"), Str(e, "reason")});
      }
      std::cout << w.Render("") << "\n";
    }
    // How the fractions of each GPU are kept apart, and whether the queue
    // shares it: "mps", "none: one job", "none: shared anyway".
    const auto isolation = [](const json& g) {
      const std::string kind = g.value("isolation", "none");
      if (kind != "none") return kind;
      return kind +
             (g.value("shareable", true) ? ": shared anyway" : ": one job");
    };
    TextTable gpus(
        {"GPU", "POOL", "KIND", "ISOLATION", "MEMORY", "MILLI", "JOBS"},
        {false, false, false, false, true, true, false});
    for (const json& g : (*cluster)["gpus"]) {
      std::string jobs;
      for (const json& id : g.value("jobs", json::array())) {
        jobs += (jobs.empty() ? "" : ",") + id.dump();
      }
      const bool drained = g.value("drained", false);
      gpus.AddRow(
          {Str(g, "id") + (drained ? " (drained)" : ""), Str(g, "pool"),
           Str(g, "kind"), isolation(g),
           GiB(Int(g, "reserved_memory_mib")) + "/" + GiB(Int(g, "memory_mib")),
           std::to_string(Int(g, "reserved_milli")) + "/1000",
           jobs.empty() ? "-" : jobs});
    }
    std::cout << gpus.Render("");
    return {};
  });
}

int RunQueue(const QueueArgs& args) {
  return Run([&]() -> Status {
    Result<json> queue = Client(args.client).Queue(args.pool);
    TESSERA_RETURN_IF_ERROR(queue);
    const auto mine = [&](const json& j) {
      return args.user.empty() || Str(j, "user") == args.user;
    };
    if (args.client.json) {
      json out = *queue;
      for (json& p : out["pools"]) {
        for (const char* list : {"queued", "running"}) {
          json kept = json::array();
          for (const json& j : p[list]) {
            if (mine(j)) kept.push_back(j);
          }
          p[list] = std::move(kept);
        }
      }
      PrintJson(out);
      return {};
    }
    // "2 GPUs", "250m + 8.0 GiB".
    const auto demand = [](const json& j) {
      const json& d = j["demand"];
      if (Int(d, "gpus") > 0) return Str(d, "gpus") + " GPU";
      return Str(d, "gpu_milli") + "m + " + GiB(Int(d, "gpu_memory_mib"));
    };
    for (const json& p : (*queue)["pools"]) {
      std::cout << "pool " << Str(p, "name") << " (" << Str(p, "policy") << ", "
                << Str(p, "gpus") << " GPUs): " << p["queued"].size()
                << " queued, " << p["running"].size() << " running\n";
      TextTable q({"POS", "ID", "USER", "NAME", "DEMAND", "WAITING",
                   "EARLIEST START", "WHY"},
                  {true, true, false, false, false, true, false, false});
      for (const json& j : p["queued"]) {
        if (!mine(j)) continue;
        const json& start = j["estimated_start"];
        q.AddRow({Str(j, "position"), Str(j, "id"), Str(j, "user"),
                  Str(j, "name"), demand(j),
                  HumanDuration(j.value("waiting_s", 0.0)),
                  start.is_string() ? start.get<std::string>() : "unknown",
                  Str(j, "why")});
      }
      if (!p["queued"].empty()) std::cout << q.Render("") << "\n";
    }
    return {};
  });
}

}  // namespace tessera::cli
