#ifndef TESSERA_ESTIMATOR_DEVICE_YAML_INTERNAL_H_
#define TESSERA_ESTIMATOR_DEVICE_YAML_INTERNAL_H_

// Pieces of DeviceCatalog::MergeYaml shared by its source files.

#include <yaml-cpp/yaml.h>

#include <string>

#include "common/result.h"
#include "estimator/device_catalog.h"

namespace tessera::estimator {

// Applies a device entry's `efficiency:` map (the format at MergeYaml) to
// `surface`. Keys not given keep their value; any key given sets
// `measured`. On error `surface` is unchanged and the message names `path`,
// the line, `label` (the entry) and the field, e.g. "efficiency.cuda_cores.
// gemm.max".
Status ApplyEfficiencyYaml(const std::string& path, const std::string& label,
                           const YAML::Node& node, EfficiencySurface* surface);

}  // namespace tessera::estimator

#endif  // TESSERA_ESTIMATOR_DEVICE_YAML_INTERNAL_H_
