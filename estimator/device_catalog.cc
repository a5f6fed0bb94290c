#include "estimator/device_catalog.h"
