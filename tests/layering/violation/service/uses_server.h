// A service header that uses the server above it: the check must fail.
#include "server/routes.h"
