#ifndef TESSERA_ESTIMATOR_DEVICE_CATALOG_H_
#define TESSERA_ESTIMATOR_DEVICE_CATALOG_H_

// The device catalog: GPUs (and the CPU kind used for calibration) with the
// datasheet figures the time and memory models need. Built in; extended or
// overridden from YAML. Being written for the estimator issue.

#endif  // TESSERA_ESTIMATOR_DEVICE_CATALOG_H_
