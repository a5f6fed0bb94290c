#include "common/result.h"

namespace tessera {

Error Error::WithContext(const std::string& context) const {
  return Error{code, context + ": " + message, retry_after_s};
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

Error Unavailable(std::string message) {
  return Error{ErrorCode::kUnavailable, std::move(message)};
}

Error RateLimited(std::string message, double retry_after_s) {
  return Error{ErrorCode::kRateLimited, std::move(message), retry_after_s};
}

int ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadInput:
      return 2;
    case ErrorCode::kInfeasible:
      return 3;
    case ErrorCode::kInternal:
    case ErrorCode::kUnavailable:
    case ErrorCode::kRateLimited:
      return 1;
  }
  return 1;
}

}  // namespace tessera
