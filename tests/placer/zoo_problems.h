#ifndef TESSERA_TESTS_PLACER_ZOO_PROBLEMS_H_
#define TESSERA_TESTS_PLACER_ZOO_PROBLEMS_H_

// The problems the zoo tests place: every zoo model x the named clusters of
// models/clusters/ x {inference at batch 1, training at batch 8}.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placer/core/place.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::placer::testing {

inline const char* const kZooModels[] = {
    "resnet50", "mobilenet_v2", "inception_v3", "vgg16",
    "vit_b_16", "gpt2",         "bert_base"};

struct ZooProblem {
  std::string model, cluster_name;
  bool training = false;
  Cluster cluster;
  Problem problem;
  const char* mode() const { return training ? "training" : "inference"; }
  // "gpt2 on crumbs (training)", for failure messages.
  std::string name() const {
    return model + " on " + cluster_name + " (" + mode() + ")";
  }
};

// Loads them, inference first, model by model; a model, cluster or problem
// that does not load is a test failure (and left out).
inline std::vector<ZooProblem> LoadZooProblems(
    const std::vector<std::string>& clusters) {
  const std::string root = TESSERA_SOURCE_DIR;
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  std::vector<ZooProblem> out;
  for (const bool training : {false, true}) {
    for (const char* m : kZooModels) {
      graph::LoadOptions load;
      load.batch = training ? 8 : 1;
      auto model = graph::LoadModel(root + "/models/zoo/" + m + ".onnx", load);
      if (!model) {
        ADD_FAILURE() << model.error().message;
        continue;
      }
      for (const std::string& name : clusters) {
        auto cluster = LoadCluster(root + "/models/clusters/" + name + ".yaml",
                                   catalog, {});
        if (!cluster) {
          ADD_FAILURE() << cluster.error().message;
          continue;
        }
        ProblemOptions po;
        po.training = training;
        auto problem = BuildProblem(*model, *cluster, po);
        if (!problem) {
          ADD_FAILURE() << problem.error().message;
          continue;
        }
        out.push_back(
            {m, name, training, *cluster, std::move(problem).value()});
      }
    }
  }
  return out;
}

}  // namespace tessera::placer::testing

#endif  // TESSERA_TESTS_PLACER_ZOO_PROBLEMS_H_
