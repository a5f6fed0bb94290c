#ifndef TESSERA_CLI_OUTPUT_H_
#define TESSERA_CLI_OUTPUT_H_

// Printing helpers shared by the commands: errors and warnings on stderr,
// aligned text tables on stdout.

#include <string>
#include <vector>

#include "common/result.h"

namespace tessera::cli {

// Prints "tessera: error: ..." and returns the error's exit code.
int ReportError(const Error& error);
void Warn(const std::string& message);

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
