#pragma once
// Typed reads of a cluster file's fields by dotted path ("node.nvlink.gbytes_per_s"), each error one line that
// names the field where the user wrote it: "FILE:LINE:COLUMN: path: ..." for the file, "--set KEY: ..." for a
// value given on the command line.

#include "gputwin/common/yaml_fields.hpp"

#include <initializer_list>
#include <string>
#include <vector>

namespace gputwin::topo {

class FieldReader {
public:
  // `set_keys`: the keys `--set` replaced in `file.root`, whose errors name the flag rather than a file line.
  FieldReader(config::YamlFile file, std::vector<std::string> set_keys);

  // Where the field at `path` is, as the start of an error: "FILE:LINE:COLUMN: path", "--set path" or
  // "--set KEY: path" for a field inside a value given with --set KEY, and "FILE:LINE:COLUMN: path (with --set
  // KEY)" for a field with a part replaced by --set KEY. REQUIRES: the field exists.
  std::string where(const std::string& path) const;
  bool has(const std::string& path) const;

  // Checks the field at `path` ("" = the top level) is a mapping with no key outside `keys`.
  void mapping(const std::string& path, std::initializer_list<const char*> keys) const;

  double positive_number(const std::string& path) const;
  // A positive number or a list of 1 .. `max_count` positive numbers ([2, 1]); a number is a list of one.
  std::vector<double> positive_numbers(const std::string& path, size_t max_count) const;
  double non_negative_number(const std::string& path) const;
  int positive_integer(const std::string& path) const;
  int non_negative_integer(const std::string& path) const;
  bool boolean(const std::string& path) const;
  std::string text(const std::string& path) const;
  // A list of lists of integers: [[0, 1], [2, 3]].
  std::vector<std::vector<int>> integer_lists(const std::string& path) const;

private:
  YAML::Node find(const std::string& path) const;                                // an invalid node if absent
  YAML::Node scalar(const std::string& path, const std::string& expected) const; // throws unless a scalar
  std::string where(const std::string& path, const YAML::Node& node) const;
  [[noreturn]] void fail(const std::string& path, const std::string& message) const;
  int integer(const std::string& path, const YAML::Node& node, const std::string& expected) const;

  config::YamlFile file_;
  std::vector<std::string> set_keys_;
};

} // namespace gputwin::topo
