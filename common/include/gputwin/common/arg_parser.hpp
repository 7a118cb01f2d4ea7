#pragma once
// A small command-line parser shared by `gputwin` and `gputwin-engine` (the engine must build without any
// third-party library). Flags are `--name value`, `--name=value` or bare switches; every error is an
// InputError naming the flag.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::cli {

struct FlagSpec {
  std::string name;       // "--tp"
  std::string value_name; // "N"; empty for a switch
  std::string help;
  bool repeatable = false; // may be given several times (all values kept); otherwise the last one wins
  bool value_optional = false; // `--name` alone (value ""), `--name=value`, or `--name value` when value is no flag
};

class ParsedArgs {
public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // The last value given for `name`, or nullopt.
  std::optional<std::string> value(const std::string& name) const;
  // Every value given for `name`, in order.
  std::vector<std::string> values(const std::string& name) const;
  // The value of `name` parsed as an integer; throws InputError "--name: expected an integer, got 'x'".
  std::optional<int64_t> integer(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // Gives `name` the value `value` unless the user gave it; true when it did (a default that depends on more
  // than the flag itself, such as the cluster's GPU generation).
  bool set_default(const std::string& name, const std::string& value)
  {
    if (has(name))
      return false;
    values_[name].push_back(value);
    return true;
  }

private:
  friend class ArgParser;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

class ArgParser {
public:
  // `command` as the user types it ("gputwin memory"); `summary` one line for --help.
  ArgParser(std::string command, std::string summary);

  void add_switch(const std::string& name, const std::string& help);
  void add_option(const std::string& name, const std::string& value_name, const std::string& help,
                  bool repeatable = false);
  // An option whose value may be left out: `--name` alone gives the value "" (has() true), `--name VALUE` takes the
  // next argument when it does not start with '-', `--name=VALUE` always.
  void add_optional_value(const std::string& name, const std::string& value_name, const std::string& help);
  // A heading in --help before the flags added next.
  void add_section(const std::string& title);
  // Allow up to `max_count` positional arguments, described as `usage` in --help ("TRACE...").
  void allow_positional(const std::string& usage, size_t max_count);

  // Parses `args` (without the program and subcommand names). `--help`/`-h` sets help_requested().
  // Throws InputError on an unknown flag, a missing value, or too many positional arguments.
  ParsedArgs parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_requested_; }
  std::string help() const;

private:
  const FlagSpec* find(const std::string& name) const;

  std::string command_, summary_, positional_usage_;
  size_t max_positional_ = 0;
  std::vector<std::pair<std::string, std::vector<FlagSpec>>> sections_;
  bool help_requested_ = false;
};

// Parses the whole of `text` as a decimal integer; throws InputError naming `flag` otherwise.
int64_t parse_integer(const std::string& flag, const std::string& text);

} // namespace gputwin::cli
