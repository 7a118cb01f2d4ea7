#pragma once
// A small command-line parser shared by `gputwin` and `gputwin-engine` (the engine must build without any
// third-party library). Flags are `--name value`, `--name=value` or bare switches; every error is an
// InputError naming the flag.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::cli {

class ParsedArgs;

// What an expanding option's value stands for: arguments of the same parser (`--tp`, `8`, `--sp`, ...) and notes for
// the user (what the source holds that these arguments do not express).
struct Expansion {
  std::vector<std::string> args;
  std::vector<std::string> notes;
};
// Turns an expanding option's value (a file name) into its arguments. `explicit_args` are the command line's own,
// which win over the expansion's: an expander whose arguments depend on others (a count derived from sizes) reads
// them there.
using Expander = std::function<Expansion(const std::string& value, const ParsedArgs& explicit_args)>;

struct FlagSpec {
  std::string name;       // "--tp"
  std::string value_name; // "N"; empty for a switch
  std::string help;
  bool repeatable = false; // may be given several times (all values kept); otherwise the last one wins
  bool value_optional = false; // `--name` alone (value ""), `--name=value`, or `--name value` when value is no flag
  Expander expand = nullptr;   // set for an expanding option (add_expanding_option)
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
  // What expanding options noted (their expanders' notes, and arguments this command does not take), for the
  // command to state on stderr.
  const std::vector<std::string>& notes() const { return notes_; }
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
  std::vector<std::string> notes_;
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
  // An option whose value stands for more arguments (`--megatron-args FILE`): after the command line is parsed,
  // `expand(value, explicit)` gives them and they are parsed as if given, except that a flag the command line gives
  // itself wins. An expanded flag this parser does not take is left out and named in a note (ParsedArgs::notes).
  void add_expanding_option(const std::string& name, const std::string& value_name, const std::string& help,
                            Expander expand);
  // A heading in --help before the flags added next.
  void add_section(const std::string& title);
  // Allow up to `max_count` positional arguments, described as `usage` in --help ("TRACE...").
  void allow_positional(const std::string& usage, size_t max_count);

  // Parses `args` (without the program and subcommand names), then expands the expanding options given (not with
  // --help). `--help`/`-h` sets help_requested(). Throws InputError on an unknown flag, a missing value, or too
  // many positional arguments, and what an expander throws.
  ParsedArgs parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_requested_; }
  std::string help() const;

private:
  const FlagSpec* find(const std::string& name) const;
  // Reads `args` into `parsed`. An unknown flag throws, or with `unknown` set is appended there (its value, the
  // next argument unless that is a flag, skipped).
  void read_arguments(const std::vector<std::string>& args, ParsedArgs& parsed, std::vector<std::string>* unknown);
  void expand(const FlagSpec& spec, ParsedArgs& parsed);

  std::string command_, summary_, positional_usage_;
  size_t max_positional_ = 0;
  std::vector<std::pair<std::string, std::vector<FlagSpec>>> sections_;
  bool help_requested_ = false;
};

// Parses the whole of `text` as a decimal integer; throws InputError naming `flag` otherwise.
int64_t parse_integer(const std::string& flag, const std::string& text);
// Parses the whole of `text` as a finite decimal number ("1.5", "2e-3"; not "0x10", "inf", "nan", "1.5x"); throws
// InputError naming `flag` otherwise.
double parse_number(const std::string& flag, const std::string& text);

} // namespace gputwin::cli
