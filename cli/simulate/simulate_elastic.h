#ifndef TESSERA_CLI_SIMULATE_SIMULATE_ELASTIC_H_
#define TESSERA_CLI_SIMULATE_SIMULATE_ELASTIC_H_

// The gang-vs-elastic output shared by `simulate --mode timed --elastic`
// and `--mode models --elastic` (cli/simulate/simulate_elastic.cc).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/output.h"
#include "cli/simulate/simulate.h"
#include "common/result.h"
#include "scheduler/topology.h"
#include "sim/model_workload.h"
#include "sim/timed_elastic.h"

namespace tessera::cli {

// One run's figures: started, makespan_s, mean_jct_s, mean_elastic_jct_s,
// mean_wait_s, ..., grows, shrinks, rounds, seconds.
nlohmann::json ElasticRunJson(const sim::ElasticTimedRun& r);
// Elastic over gang: makespan, mean_jct, mean_elastic_jct, mean_wait.
nlohmann::json ElasticRatioJson(const sim::ElasticComparison& c);

// A table whose first columns are `labels`' headers, then the runs'
// figures; AddElasticRows adds a gang row, an elastic row and an
// elastic/gang row of ratios.
TextTable ElasticTable(const std::vector<std::string>& label_headers,
                       const std::string& elastic_jct_header);
void AddElasticRows(TextTable& table, const std::vector<std::string>& labels,
                    const sim::ElasticComparison& c);

// `--mode models --elastic PCT` (cli/simulate/simulate_models_elastic.cc): the
// flags checked before the models are sized, then per seed the same jobs
// gang-only and with PCT% of the one-GPU jobs data-parallel sweeps.
Status CheckModelsElasticArgs(const SimulateArgs& args);
int RunSimulateModelsElastic(const SimulateArgs& args,
                             const scheduler::Topology& topology,
                             const std::string& pool,
                             const scheduler::GpuInfo& gpu,
                             const std::vector<sim::ModelJobKind>& kinds);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_SIMULATE_SIMULATE_ELASTIC_H_
