#ifndef TESSERA_COMMON_STRINGS_H_
#define TESSERA_COMMON_STRINGS_H_

// Small formatting helpers shared by every component's human output.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// "25,557,032"
std::string WithThousands(int64_t n);

// Bytes in binary units: "97.5 MiB", "1.2 GiB", "512 B".
std::string HumanBytes(int64_t bytes);

// Seconds as milliseconds with three decimals, no unit: 0.0012345 -> "1.234".
std::string FormatMs(double seconds);

// A duration for people: "45 s", "3.5 min", "2.1 h", "3.0 d".
std::string HumanDuration(double seconds);

// Splits `s` at every `sep`; empty pieces are kept.
std::vector<std::string_view> Split(std::string_view s, char sep);

// `s` without the white space at either end.
std::string_view Trim(std::string_view s);

// `s` safe inside XML/HTML text and attribute values: & < > " ' escaped.
std::string EscapeXml(std::string_view s);

// FNV-1a, 64 bits: a quick fingerprint of `s` (not for security).
uint64_t Fnv1a64(std::string_view s);
// An HTTP entity tag for `body`: its Fnv1a64 as 16 hex digits, quoted.
std::string EntityTag(std::string_view body);

// Parses a non-negative decimal integer; false on anything else or overflow.
bool ParseInt64(std::string_view s, int64_t* out);

// Parses a whole string as a finite decimal number (fixed or scientific);
// false on anything else, infinities and NaN included.
bool ParseFiniteDouble(std::string_view s, double* out);

}  // namespace tessera

#endif  // TESSERA_COMMON_STRINGS_H_
