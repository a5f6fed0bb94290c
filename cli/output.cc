#include "cli/output.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace tessera::cli {

std::string Percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", whole > 0 ? 100 * part / whole : 0);
  return buf;
}

int ReportError(const Error& error) {
  std::cerr << "tessera: error: " << error.message << "\n";
  return ExitCodeFor(error.code);
}

Error WithFlagNames(Error error, std::span<const FieldFlag> table) {
  auto flag_of = [&](std::string_view field) -> const std::string_view* {
    for (const FieldFlag& f : table) {
      if (f.field == field) return &f.flag;
    }
    return nullptr;
  };
  const std::string& m = error.message;
  std::string out;
  size_t i = 0;
  if (const size_t colon = m.find(": "); colon != std::string::npos) {
    const std::string_view lead(m.data(), colon);
    // A value's error: "FIELD 'VALUE'", the value quoted to its end.
    const size_t quote = lead.find(" '");
    const bool value = quote != std::string_view::npos && lead.back() == '\'';
    if (const std::string_view* flag = flag_of(lead)) {
      out = *flag;
      i = colon;
    } else if (value && (flag = flag_of(lead.substr(0, quote))) != nullptr) {
      out = *flag;
      i = quote;
    }
  }
  // The later fields: words of letters, digits, '_' and '.', less the '.'
  // that ends a sentence.
  auto in_word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  while (i < m.size()) {
    if (!in_word(m[i])) {
      out += m[i++];
      continue;
    }
    size_t end = i;
    while (end < m.size() && in_word(m[end])) ++end;
    std::string_view word(m.data() + i, end - i);
    const std::string_view run = word;
    while (!word.empty() && word.back() == '.') word.remove_suffix(1);
    const std::string_view* flag =
        word.find_first_of("._") != std::string_view::npos ? flag_of(word)
                                                           : nullptr;
    if (flag != nullptr) {
      out += *flag;
      out += run.substr(word.size());
    } else {
      out += run;
    }
    i = end;
  }
  error.message = std::move(out);
  return error;
}

void Warn(const std::string& message) {
  std::cerr << "tessera: warning: " << message << "\n";
}

double MonotonicSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Fixed(double x, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

Progress::Progress(std::string subject)
    : subject_(std::move(subject)),
      enabled_(isatty(2) != 0),
      start_(MonotonicSeconds()) {}

void Progress::Stage(std::string_view stage) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K%s: %.*s (%.1f s)", subject_.c_str(),
               static_cast<int>(stage.size()), stage.data(),
               MonotonicSeconds() - start_);
  std::fflush(stderr);
}

void Progress::Done() const {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

TextTable::TextTable(std::vector<std::string> header,
                     std::vector<bool> right_aligned)
    : right_(std::move(right_aligned)) {
  rows_.push_back(std::move(header));
  right_.resize(rows_.front().size(), false);
}

void TextTable::AddRow(std::vector<std::string> row) {
  rows_.push_back(std::move(row));
}

namespace {
// Display width, counting each UTF-8 code point once.
size_t Width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}
}  // namespace

std::string TextTable::Render(const std::string& indent) const {
  std::vector<size_t> width(right_.size(), 0);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], Width(row[c]));
    }
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line = indent;
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      const std::string pad(width[c] - Width(row[c]), ' ');
      line += right_[c] ? pad + row[c] : row[c] + pad;
      if (c + 1 < row.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace tessera::cli
