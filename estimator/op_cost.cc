#include "estimator/op_cost.h"
