#ifndef TESSERA_CLI_OUTPUT_H_
#define TESSERA_CLI_OUTPUT_H_

// Printing helpers shared by the commands: errors and warnings on stderr,
// aligned text tables on stdout.

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/strings.h"  // HumanDuration

namespace tessera::cli {

// Prints "tessera: error: ..." and returns the error's exit code.
int ReportError(const Error& error);
void Warn(const std::string& message);

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
