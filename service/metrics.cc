// Metrics: Prometheus text exposition.
#include "service/metrics_internal.h"

#include <sstream>

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::Topology;

void Histogram::Observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) ++counts_[i];
  }
  ++count_;
  sum_ += seconds;
}

std::string Histogram::Render(const std::string& name,
                              const std::string& help) const {
  std::ostringstream out;
  out << "# HELP " << name << " " << help << "\n# TYPE " << name
      << " histogram\n";
  for (size_t i = 0; i < kBounds.size(); ++i) {
    out << name << "_bucket{le=\"" << kBounds[i] << "\"} " << counts_[i]
        << "\n";
  }
  out << name << "_bucket{le=\"+Inf\"} " << count_ << "\n"
      << name << "_sum " << sum_ << "\n"
      << name << "_count " << count_ << "\n";
  return out.str();
}

std::string Metrics::Render(
    const ClusterState& state,
    const std::map<std::pair<std::string, std::string>, int64_t>& jobs) const {
  std::ostringstream out;
  out << "# HELP tessera_jobs Jobs in the queue or running, by state and "
         "pool.\n# TYPE tessera_jobs gauge\n";
  for (const auto& [key, n] : jobs) {
    out << "tessera_jobs{state=\"" << key.first << "\",pool=\"" << key.second
        << "\"} " << n << "\n";
  }
  out << "# HELP tessera_jobs_submitted_total Jobs accepted since start.\n"
         "# TYPE tessera_jobs_submitted_total counter\n"
         "tessera_jobs_submitted_total "
      << submitted << "\n"
      << "# HELP tessera_jobs_finished_total Jobs that ended since start.\n"
         "# TYPE tessera_jobs_finished_total counter\n"
         "tessera_jobs_finished_total "
      << finished << "\n"
      << "# HELP tessera_launch_retries_total Starts put off because the "
         "cluster engine could not be reached.\n"
         "# TYPE tessera_launch_retries_total counter\n"
         "tessera_launch_retries_total "
      << launch_retries << "\n"
      << "# HELP tessera_store_errors_total Writes the job store refused "
         "(each answered 503 or retried; nothing acknowledged was lost).\n"
         "# TYPE tessera_store_errors_total counter\n"
         "tessera_store_errors_total "
      << store_errors << "\n";
  const Topology& t = state.topology();
  const struct {
    const char* name;
    const char* help;
    int which;
  } gauges[] = {
      {"tessera_gpu_memory_reserved_mib", "GPU memory reserved by jobs.", 0},
      {"tessera_gpu_memory_free_mib", "GPU memory free for jobs.", 1},
      {"tessera_gpu_milli_reserved", "GPU compute reserved (1000 = whole).", 2},
      {"tessera_gpu_milli_free", "GPU compute free (1000 = whole).", 3},
  };
  for (const auto& g : gauges) {
    out << "# HELP " << g.name << " " << g.help << "\n# TYPE " << g.name
        << " gauge\n";
    for (size_t i = 0; i < t.gpus.size(); ++i) {
      const int gpu = static_cast<int>(i);
      const int64_t v = g.which == 0   ? state.reserved_memory_mib(gpu)
                        : g.which == 1 ? state.free_memory_mib(gpu)
                        : g.which == 2 ? state.reserved_milli(gpu)
                                       : state.free_milli(gpu);
      out << g.name << "{gpu=\"" << t.gpus[i].id << "\",pool=\""
          << t.nodes[t.gpus[i].node].pool << "\"} " << v << "\n";
    }
  }
  out << queue_wait.Render("tessera_queue_wait_seconds",
                           "Time from submission to start.")
      << decision_latency.Render("tessera_admission_latency_seconds",
                                 "Time of one pool's scheduling decision.");
  return out.str();
}

}  // namespace tessera::service
