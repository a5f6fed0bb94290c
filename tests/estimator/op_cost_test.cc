#include "estimator/op_cost.h"

#include <gtest/gtest.h>
