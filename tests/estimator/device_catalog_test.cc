#include "estimator/device_catalog.h"

#include <gtest/gtest.h>
