#include "gputwin/common/arg_parser.hpp"

#include "gputwin/common/input_error.hpp"

#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace gputwin::cli {

std::optional<std::string> ParsedArgs::value(const std::string& name) const
{
  const auto it = values_.find(name);
  if (it == values_.end() || it->second.empty())
    return std::nullopt;
  return it->second.back();
}

std::vector<std::string> ParsedArgs::values(const std::string& name) const
{
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::optional<int64_t> ParsedArgs::integer(const std::string& name) const
{
  const std::optional<std::string> text = value(name);
  if (!text)
    return std::nullopt;
  return parse_integer(name, *text);
}

int64_t parse_integer(const std::string& flag, const std::string& text)
{
  int64_t result = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (!text.empty() && *begin == '+')
    ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, result);
  if (ec == std::errc::result_out_of_range)
    throw InputError(flag + ": expected an integer that fits in 64 bits, got '" + text + "'");
  if (ec != std::errc() || ptr != end || begin == end)
    throw InputError(flag + ": expected an integer, got '" + text + "'");
  return result;
}

double parse_number(const std::string& flag, const std::string& text)
{
  // Decimal only (std::from_chars, general format): no hex ("0x10"), no "inf"/"nan", the whole text.
  double result = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (!text.empty() && *begin == '+')
    ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, result, std::chars_format::general);
  if (ec != std::errc() || ptr != end || begin == end || !std::isfinite(result))
    throw InputError(flag + ": expected a finite decimal number, got '" + text + "'");
  return result;
}

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary))
{
  sections_.emplace_back("options", std::vector<FlagSpec>{});
}

void ArgParser::add_section(const std::string& title)
{
  sections_.emplace_back(title, std::vector<FlagSpec>{});
}

void ArgParser::add_switch(const std::string& name, const std::string& help)
{
  sections_.back().second.push_back(FlagSpec{name, "", help, false});
}

void ArgParser::add_option(const std::string& name, const std::string& value_name, const std::string& help,
                           bool repeatable)
{
  sections_.back().second.push_back(FlagSpec{name, value_name, help, repeatable});
}

void ArgParser::add_optional_value(const std::string& name, const std::string& value_name, const std::string& help)
{
  sections_.back().second.push_back(FlagSpec{name, value_name, help, false, true});
}

void ArgParser::add_expanding_option(const std::string& name, const std::string& value_name, const std::string& help,
                                     Expander expand)
{
  sections_.back().second.push_back(FlagSpec{name, value_name, help, false, false, std::move(expand)});
}

void ArgParser::allow_positional(const std::string& usage, size_t max_count)
{
  positional_usage_ = usage;
  max_positional_ = max_count;
}

const FlagSpec* ArgParser::find(const std::string& name) const
{
  for (const auto& section : sections_)
    for (const FlagSpec& spec : section.second)
      if (spec.name == name)
        return &spec;
  return nullptr;
}

ParsedArgs ArgParser::parse(const std::vector<std::string>& args)
{
  ParsedArgs parsed;
  read_arguments(args, parsed, nullptr);
  if (help_requested_)
    return parsed;
  for (const auto& section : sections_)
    for (const FlagSpec& spec : section.second)
      if (spec.expand && parsed.has(spec.name))
        expand(spec, parsed);
  return parsed;
}

void ArgParser::expand(const FlagSpec& spec, ParsedArgs& parsed)
{
  const std::string value = *parsed.value(spec.name);
  const Expansion expansion = spec.expand(value, parsed);
  ParsedArgs expanded;
  std::vector<std::string> unknown;
  read_arguments(expansion.args, expanded, &unknown);
  if (!expanded.positional_.empty())
    throw std::logic_error(spec.name + ": the expansion holds an argument that is no flag: '" +
                           expanded.positional_.front() + "'");
  for (const auto& [name, values] : expanded.values_)
    if (!parsed.has(name)) // the command line's own flags win
      parsed.values_[name] = values;
  parsed.notes_.insert(parsed.notes_.end(), expansion.notes.begin(), expansion.notes.end());
  if (!unknown.empty()) {
    std::string names;
    for (const std::string& name : unknown)
      names += " " + name;
    parsed.notes_.push_back(spec.name + " " + value + ": not used by " + command_ + ":" + names);
  }
}

void ArgParser::read_arguments(const std::vector<std::string>& args, ParsedArgs& parsed,
                               std::vector<std::string>* unknown)
{
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      continue;
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      if (unknown == nullptr && parsed.positional_.size() >= max_positional_)
        throw InputError("unexpected argument '" + arg + "' for '" + command_ + "' (see " + command_ + " --help)");
      parsed.positional_.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const FlagSpec* spec = find(name);
    if (spec == nullptr && unknown != nullptr) {
      unknown->push_back(name);
      if (eq == std::string::npos && i + 1 < args.size() && args[i + 1].compare(0, 2, "--") != 0)
        ++i;
      continue;
    }
    if (spec == nullptr)
      throw InputError("unknown option '" + name + "' for '" + command_ + "' (see " + command_ + " --help)");
    std::string value;
    if (spec->value_name.empty()) {
      if (eq != std::string::npos)
        throw InputError(name + ": takes no value, got '" + arg.substr(eq + 1) + "'");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (spec->value_optional) {
      if (i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-')
        value = args[++i];
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw InputError(name + ": expected a value (" + spec->value_name + ")");
    }
    auto& slot = parsed.values_[name];
    if (!spec->repeatable)
      slot.clear();
    slot.push_back(value);
  }
}

std::string ArgParser::help() const
{
  std::ostringstream out;
  out << "usage: " << command_ << " [options]" << (positional_usage_.empty() ? "" : " " + positional_usage_) << "\n\n"
      << summary_ << "\n";
  for (const auto& [title, flags] : sections_) {
    if (flags.empty())
      continue;
    out << "\n" << title << ":\n";
    for (const FlagSpec& spec : flags) {
      std::string left = "  " + spec.name +
                         (spec.value_name.empty() ? "" : spec.value_optional ? " [" + spec.value_name + "]" : " " + spec.value_name);
      if (left.size() < 30)
        left.resize(30, ' ');
      else
        left += "\n" + std::string(30, ' ');
      out << left << spec.help << "\n";
    }
  }
  out << "\n  --help, -h                  this help\n";
  return out.str();
}

} // namespace gputwin::cli
