#ifndef TESSERA_TESTS_PLACER_MAXLOAD_MAX_LOAD_BRUTE_FORCE_H_
#define TESSERA_TESTS_PLACER_MAXLOAD_MAX_LOAD_BRUTE_FORCE_H_

// The max-load tests' ground truth: every assignment of a problem's nodes
// to its devices.

#include <functional>

#include "placer/maxload/max_load.h"

namespace tessera::placer::testing {

// Calls visit(x) for each of the devices^nodes assignments x of p's nodes
// to its devices, feasible or not.
template <typename Visit>
void ForEveryPlacement(const MaxLoadProblem& p, Visit&& visit) {
  const int n = static_cast<int>(p.nodes.size());
  const int devices = p.Devices();
  MaxLoadPlacement x;
  x.device.assign(n, 0);
  std::function<void(int)> go = [&](int i) {
    if (i == n) {
      visit(static_cast<const MaxLoadPlacement&>(x));
      return;
    }
    for (int d = 0; d < devices; ++d) {
      x.device[i] = d;
      go(i + 1);
    }
  };
  go(0);
}

}  // namespace tessera::placer::testing

#endif  // TESSERA_TESTS_PLACER_MAXLOAD_MAX_LOAD_BRUTE_FORCE_H_
