// Units of size, bandwidth and time, for every file tessera reads.
#include "common/units.h"

#include <charconv>
#include <cmath>
#include <string>

namespace tessera {
namespace {

struct Unit {
  std::string_view suffix;
  double scale;
};

constexpr Unit kSizeUnits[] = {
    {"B", 1},        {"KB", 1e3},     {"kB", 1e3},     {"MB", 1e6},
    {"GB", 1e9},     {"TB", 1e12},    {"KiB", 0x1p10}, {"MiB", 0x1p20},
    {"GiB", 0x1p30}, {"TiB", 0x1p40},
};
constexpr Unit kBandwidthUnits[] = {
    {"B/s", 1},        {"KB/s", 1e3},     {"kB/s", 1e3},     {"MB/s", 1e6},
    {"GB/s", 1e9},     {"TB/s", 1e12},    {"KiB/s", 0x1p10}, {"MiB/s", 0x1p20},
    {"GiB/s", 0x1p30}, {"TiB/s", 0x1p40},
};
constexpr Unit kTimeUnits[] = {
    {"ns", 1e-9},        {"us", 1e-6},
    {"\xC2\xB5s", 1e-6},  // U+00B5 micro sign
    {"\xCE\xBCs", 1e-6},  // U+03BC Greek mu
    {"ms", 1e-3},        {"s", 1},
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// Parses a non-negative finite number; `rest` receives what follows it.
Result<double> ParseLeadingNumber(std::string_view text,
                                  std::string_view* rest) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value, std::chars_format::general);
  if (ec != std::errc() || !std::isfinite(value)) {
    return BadInput("'" + std::string(text) + "' is not a number");
  }
  if (value < 0) {
    return BadInput("'" + std::string(text) + "' must not be negative");
  }
  *rest = text.substr(static_cast<size_t>(end - text.data()));
  return value;
}

template <size_t N>
Result<double> ParseWithUnit(std::string_view text, const Unit (&units)[N],
                             std::string_view example) {
  text = Trim(text);
  std::string_view unit;
  Result<double> number = ParseLeadingNumber(text, &unit);
  TESSERA_RETURN_IF_ERROR(number);
  unit = Trim(unit);
  if (unit.empty() && *number == 0) return 0.0;  // "0" needs no unit
  for (const Unit& u : units) {
    if (u.suffix == unit) return *number * u.scale;
  }
  std::string known;
  for (const Unit& u : units) {
    known += (known.empty() ? "" : ", ") + std::string(u.suffix);
  }
  std::string what = unit.empty()
                         ? "has no unit"
                         : "has unknown unit '" + std::string(unit) + "'";
  return BadInput("'" + std::string(text) + "' " + what + " (use " + known +
                  ", e.g. " + std::string(example) + ")");
}

}  // namespace

Result<int64_t> ParseBytes(std::string_view text) {
  Result<double> bytes = ParseWithUnit(text, kSizeUnits, "80GiB");
  TESSERA_RETURN_IF_ERROR(bytes);
  // 2^63 is exactly representable; anything at or above it overflows.
  if (*bytes >= 0x1p63) {
    return BadInput("'" + std::string(Trim(text)) + "' is too large");
  }
  return static_cast<int64_t>(std::llround(*bytes));
}

Result<double> ParseBandwidth(std::string_view text) {
  return ParseWithUnit(text, kBandwidthUnits, "25GB/s");
}

Result<double> ParseSeconds(std::string_view text) {
  return ParseWithUnit(text, kTimeUnits, "5us");
}

}  // namespace tessera
