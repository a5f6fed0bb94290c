#include "common/result.h"

namespace tessera {

Error Error::WithContext(const std::string& context) const {
  return Error{code, context + ": " + message};
}

Error BadInput(std::string message) {
  return Error{ErrorCode::kBadInput, std::move(message)};
}

Error Infeasible(std::string message) {
  return Error{ErrorCode::kInfeasible, std::move(message)};
}

Error Internal(std::string message) {
  return Error{ErrorCode::kInternal, std::move(message)};
}

int ExitCodeFor(ErrorCode code) { return static_cast<int>(code); }

}  // namespace tessera
