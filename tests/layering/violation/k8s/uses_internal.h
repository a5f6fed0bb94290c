// Another component's internals: the check must fail.
#include "service/state_internal.h"

// Another component's namespace for a forward declaration: allowed.
namespace tessera::http {
class Router;
}  // namespace tessera::http

// Code in another component's namespace: the check must fail.
namespace tessera::service {
void Helper();
}  // namespace tessera::service
