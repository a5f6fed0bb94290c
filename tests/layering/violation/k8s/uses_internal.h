// Another component's internals: the check must fail.
#include "service/state_internal.h"
