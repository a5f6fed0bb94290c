#ifndef TESSERA_CLI_OUTPUT_H_
#define TESSERA_CLI_OUTPUT_H_

// Printing helpers shared by the commands: errors and warnings on stderr,
// aligned text tables on stdout.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/strings.h"  // HumanDuration

namespace tessera::cli {

// Prints "tessera: error: ..." and returns the error's exit code.
int ReportError(const Error& error);
void Warn(const std::string& message);

// The libraries' errors name the field of the options they were given
// ("min_workers: at least 1, got 0"), not a flag: they have callers other
// than this CLI. A command keeps one table of the fields it fills and the
// flag each comes from, and passes what a library returns through
// WithFlagNames before it prints it ("--elastic-min: at least 1, got 0").
struct FieldFlag {
  std::string_view field;  // as the library names it: "base.model_pods_pct"
  std::string_view flag;   // "--model-pods"
};

// `error` with the fields of `table` replaced by their flags: its leading
// field (the text before the first ": ", which may name two, "min_workers,
// max_workers"; or in a value's error, "amp 'fp8': expected ...", the word
// before the value) and every later word that is a field with a '.' or '_'
// in it (a plain word such as "pool" may be prose, so only the leading one
// is taken for a field). What the table does not list is left as it is.
Error WithFlagNames(Error error, std::span<const FieldFlag> table);

// part / whole as a percentage with one decimal, "12.5%" (0 when whole is 0).
std::string Percent(double part, double whole);

// `x` with `digits` decimals: Fixed(95.2581, 2) is "95.26".
std::string Fixed(double x, int digits);

// A monotonic clock in seconds, for timing work.
double MonotonicSeconds();

// Progress lines on stderr ("loading model.onnx: inferring shapes (1.2 s)")
// when stderr is a terminal; silent otherwise, so scripts see clean output.
class Progress {
 public:
  explicit Progress(std::string subject);
  void Stage(std::string_view stage);
  void Done() const;

 private:
  std::string subject_;
  bool enabled_;
  double start_;
};

// A left-aligned text table; columns listed in `right_aligned` are padded on
// the left (numbers).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header,
                     std::vector<bool> right_aligned = {});
  void AddRow(std::vector<std::string> row);
  std::string Render(const std::string& indent = "  ") const;

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

}  // namespace tessera::cli

#endif  // TESSERA_CLI_OUTPUT_H_
