// YamlReader: positions, field paths and key checks for YAML documents.
#include "common/yaml_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace tessera {

std::string JoinNames(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) {
    out += (out.empty() ? "" : ", ") + std::string(n);
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string DidYouMean(std::string_view name,
                       std::span<const std::string_view> known) {
  for (std::string_view k : known) {
    if (EditDistance(name, k) <= 2) {
      return "did you mean '" + std::string(k) + "'? ";
    }
  }
  return "";
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return BadInput(path + ": no such file");
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return BadInput(path + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput(path + ": cannot open the file for reading");
  std::string text{std::istreambuf_iterator<char>(in),
                   std::istreambuf_iterator<char>()};
  if (in.bad()) return BadInput(path + ": cannot read the file");
  return text;
}

std::string YamlReader::At(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0) return source_ + ": ";
  return source_ + ":" + std::to_string(mark.line + 1) + ": ";
}

Error YamlReader::Fail(const YAML::Node& at, const std::string& field,
                       const std::string& what) const {
  return BadInput(At(at) + field + ": " + what);
}

Error YamlReader::Fail(const Field& f, const std::string& label,
                       const std::string& what) const {
  return Fail(f.where(), Join(label, f.key), what);
}

std::string YamlReader::Join(const std::string& label, const std::string& key) {
  return label.empty() ? key : label + "." + key;
}

const YamlReader::Field* YamlReader::Find(const Fields& fields,
                                          std::string_view key) {
  for (const Field& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::string YamlReader::TypeName(const YAML::Node& node) {
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  if (node.IsNull()) return "nothing";
  return "a single value '" + node.Scalar() + "'";
}

Result<YamlReader::Fields> YamlReader::MapFields(
    const YAML::Node& node, const std::string& label,
    std::span<const std::string_view> known) const {
  const std::string what = label.empty() ? root_ : label;
  if (!node.IsMap()) {
    return BadInput(At(node) + what + ": expected a map of 'key: value', got " +
                    TypeName(node));
  }
  Fields fields;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      return BadInput(At(kv.first) + what + ": a key must be a plain word");
    }
    const std::string& key = kv.first.Scalar();
    if (std::ranges::find(known, key) == known.end()) {
      return BadInput(At(kv.first) + "unknown key '" + key + "'" +
                      (label.empty() ? " at the top level" : " in " + label) +
                      " (" + DidYouMean(key, known) +
                      "known keys: " + JoinNames(known) + ")");
    }
    if (Find(fields, key) != nullptr) {
      return BadInput(At(kv.first) + Join(label, key) + ": given twice");
    }
    fields.push_back(Field{key, kv.first, kv.second});
  }
  return fields;
}

Result<std::string> YamlReader::Text(const Field& f,
                                     const std::string& label) const {
  if (f.value.IsNull()) return Fail(f, label, "has no value");
  if (!f.value.IsScalar()) {
    return Fail(f, label, "expected a single value, got " + TypeName(f.value));
  }
  return f.value.Scalar();
}

}  // namespace tessera
