#ifndef TESSERA_COMMON_RESULT_H_
#define TESSERA_COMMON_RESULT_H_

// Errors are values at the edges: every fallible operation on outside input
// (files, flags, YAML, HTTP bodies) returns Result<T>, which holds either a T
// or an Error whose message a user can act on. The API mirrors C++23's
// std::expected so that switching later is mechanical; we do not use
// <expected> itself because clang-tidy 14 cannot parse libstdc++ 12's.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tessera {

// What kind of failure, which also decides the CLI's exit code
// (ExitCodeFor; docs/design.md, "Exit codes").
enum class ErrorCode {
  kBadInput = 2,     // the user's file, flag or request is wrong
  kInfeasible = 3,   // the input is valid but cannot be satisfied
  kInternal = 1,     // a bug or an environment failure
  kUnavailable = 4,  // try again later: an engine or service is unreachable
  kRateLimited = 5,  // too many requests: try again after retry_after_s
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;       // names the file/field and what is wrong
  double retry_after_s = 0;  // kRateLimited: when a retry may succeed

  // Returns a copy whose message is prefixed with `context: `.
  Error WithContext(const std::string& context) const;
};

Error BadInput(std::string message);
Error Infeasible(std::string message);
Error Internal(std::string message);
Error Unavailable(std::string message);
Error RateLimited(std::string message, double retry_after_s);

// Process exit code for `code`: 2 bad input, 3 infeasible, 1 otherwise
// (an internal error, or something to try again later, rate limits too).
int ExitCodeFor(ErrorCode code);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace tessera

// Propagates an error from an expression yielding Status or Result<T>.
#define TESSERA_RETURN_IF_ERROR(expr) \
  do {                                \
    auto&& tessera_status_ = (expr);  \
    if (!tessera_status_) {           \
      return tessera_status_.error(); \
    }                                 \
  } while (false)

#endif  // TESSERA_COMMON_RESULT_H_
