#ifndef TESSERA_COMMON_UNITS_H_
#define TESSERA_COMMON_UNITS_H_

// Sizes, bandwidths and durations as people write them in tessera's files
// and flags, and the binary size constants.

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace tessera {

inline constexpr int64_t kKiB = int64_t{1} << 10;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

// Unit parsers shared by every YAML file of tessera. A number (decimal point
// and exponent allowed, no sign) followed by an optional space and a
// required, case-sensitive unit. Decimal units are powers of 10 (GB = 1e9),
// binary units powers of 2 (GiB = 2^30). Negative, non-finite or unitless
// values are errors whose message quotes the input and the accepted units.

// Sizes: "80GiB", "24 GB", "512MiB", "1.5TiB" -> bytes (rounded).
Result<int64_t> ParseBytes(std::string_view text);
// Bandwidths: "25GB/s", "3.35TB/s", "900 MiB/s" -> bytes per second.
Result<double> ParseBandwidth(std::string_view text);
// Durations: "5us", "5µs", "1ms", "100ns", "2s" -> seconds.
Result<double> ParseSeconds(std::string_view text);

}  // namespace tessera

#endif  // TESSERA_COMMON_UNITS_H_
