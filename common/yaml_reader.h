#ifndef TESSERA_COMMON_YAML_READER_H_
#define TESSERA_COMMON_YAML_READER_H_

// Reading YAML documents (cluster specs, the serve config) with errors that
// read "SOURCE:LINE: FIELD: what is wrong", FIELD like nodes[0].gpus[1].count,
// and a did-you-mean for misspelt keys.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/result.h"

namespace tessera {

// "a, b, c".
std::string JoinNames(std::span<const std::string_view> names);
// Levenshtein distance.
size_t EditDistance(std::string_view a, std::string_view b);
// "did you mean 'k'? " for the first known name within distance 2, or "".
std::string DidYouMean(std::string_view name,
                       std::span<const std::string_view> known);

// The whole file at `path`: kBadInput "PATH: no such file", "not a regular
// file", "cannot open/read the file".
Result<std::string> ReadTextFile(const std::string& path);

// Parses `text` as YAML and gives the root to `parse`. A syntax error is
// kBadInput "SOURCE:LINE: malformed YAML: ..."; an exception from yaml-cpp
// while `parse` reads the document becomes kInternal naming the source.
template <typename T, typename Parse>
Result<T> ParseYaml(std::string_view text, std::string_view source,
                    Parse&& parse) {
  const std::string name(source);
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return parse(root);
  } catch (const YAML::Exception& e) {
    const std::string at =
        e.mark.is_null() ? name : name + ":" + std::to_string(e.mark.line + 1);
    return BadInput(at + ": malformed YAML: " + e.msg);
  } catch (const std::exception& e) {
    return Internal(name + ": " + e.what());
  }
}

class YamlReader {
 public:
  // One `key: value` of a YAML map, with the key's node for its line (a
  // null value's own mark points past it).
  struct Field {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
    const YAML::Node& where() const {
      return value.IsNull() ? key_node : value;
    }
  };
  using Fields = std::vector<Field>;

  // `source` names the document in messages (a path); `root` names its top
  // level ("the spec", "the configuration").
  YamlReader(std::string_view source, std::string_view root)
      : source_(source), root_(root) {}

  const std::string& source() const { return source_; }
  // "SOURCE:LINE: " of `node` ("SOURCE: " when it has no position).
  std::string At(const YAML::Node& node) const;
  Error Fail(const YAML::Node& at, const std::string& field,
             const std::string& what) const;
  Error Fail(const Field& f, const std::string& label,
             const std::string& what) const;
  // "label.key", or "key" at the top level.
  static std::string Join(const std::string& label, const std::string& key);
  static const Field* Find(const Fields& fields, std::string_view key);
  // "a list", "a map", "nothing", "a single value 'x'".
  static std::string TypeName(const YAML::Node& node);

  // Checks that `node` is a map whose keys are `known` and distinct.
  Result<Fields> MapFields(const YAML::Node& node, const std::string& label,
                           std::span<const std::string_view> known) const;
  // A scalar's text; an error for a missing value, a list or a map.
  Result<std::string> Text(const Field& f, const std::string& label) const;

 private:
  std::string source_, root_;
};

}  // namespace tessera

#endif  // TESSERA_COMMON_YAML_READER_H_
