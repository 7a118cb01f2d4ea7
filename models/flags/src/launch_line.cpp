#include "gputwin/models/launch_line.hpp"

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/checked_math.hpp"
#include "gputwin/common/input_error.hpp"

#include <cctype>
#include <cstdio>

namespace gputwin::cli {

namespace {

struct Word {
  std::string text;
  int line = 0;
  bool assignment = false; // NAME=value with an unquoted NAME
};
using Command = std::vector<Word>;

bool is_name_char(char c, bool first)
{
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) || (!first && std::isdigit(static_cast<unsigned char>(c)));
}

bool is_assignment(const std::string& word)
{
  const size_t eq = word.find('=');
  if (eq == 0 || eq == std::string::npos)
    return false;
  for (size_t i = 0; i < eq; ++i)
    if (!is_name_char(word[i], i == 0))
      return false;
  return true;
}

class Splitter {
public:
  Splitter(const std::string& text, const std::string& path) : text_(text), path_(path) {}

  // The commands of the text, one per logical line, variables expanded as the assignments before them set them.
  std::vector<Command> commands(std::map<std::string, std::string>& env)
  {
    std::vector<Command> result;
    Command command;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n' || c == ';') {
        finish_word(command);
        finish_command(command, result, env);
        if (c == '\n')
          ++line_;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        finish_word(command);
        ++pos_;
      } else if (c == '#' && !in_word_) {
        while (pos_ < text_.size() && text_[pos_] != '\n')
          ++pos_;
      } else {
        read_word_part(env);
      }
    }
    finish_word(command);
    finish_command(command, result, env);
    return result;
  }

private:
  [[noreturn]] void fail(int line, const std::string& what) const
  {
    throw InputError(path_ + ":" + std::to_string(line) + ": " + what);
  }

  void start_word()
  {
    if (!in_word_) {
      in_word_ = true;
      word_line_ = line_;
      word_.clear();
      name_quoted_ = false;
    }
  }

  // One piece of a word at pos_: a quoted string, an escape, a variable or a plain character.
  void read_word_part(const std::map<std::string, std::string>& env)
  {
    start_word();
    const char c = text_[pos_];
    if (c == '\\') {
      if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') { // continuation: the line goes on
        ++line_;
        pos_ += 2;
        if (word_.empty())
          in_word_ = false;
        return;
      }
      if (pos_ + 1 < text_.size())
        word_ += text_[pos_ + 1];
      pos_ += 2;
    } else if (c == '\'') {
      note_quote();
      const size_t end = text_.find('\'', pos_ + 1);
      if (end == std::string::npos)
        fail(line_, "unterminated ' quote (expected a closing ')");
      count_lines(pos_ + 1, end);
      word_ += text_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
    } else if (c == '"') {
      note_quote();
      ++pos_;
      while (pos_ < text_.size() && text_[pos_] != '"') {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size() && std::string("\"\\$\n").find(text_[pos_ + 1]) != std::string::npos) {
          if (text_[pos_ + 1] != '\n')
            word_ += text_[pos_ + 1];
          else
            ++line_;
          pos_ += 2;
        } else if (text_[pos_] == '$') {
          read_variable(env);
        } else {
          if (text_[pos_] == '\n')
            ++line_;
          word_ += text_[pos_++];
        }
      }
      if (pos_ >= text_.size())
        fail(word_line_, "unterminated \" quote (expected a closing \")");
      ++pos_;
    } else if (c == '$') {
      read_variable(env);
    } else {
      word_ += c;
      ++pos_;
    }
  }

  // $NAME or ${NAME} at pos_, replaced by the value an earlier assignment of the file gave it.
  void read_variable(const std::map<std::string, std::string>& env)
  {
    size_t begin = pos_ + 1, end = begin;
    const bool braced = begin < text_.size() && text_[begin] == '{';
    if (braced) {
      end = text_.find('}', begin);
      if (end == std::string::npos)
        fail(line_, "unterminated ${ (expected a closing })");
      ++begin;
      for (size_t i = begin; i < end; ++i)
        if (!is_name_char(text_[i], i == begin))
          fail(line_, "${" + printable(text_.substr(begin, end - begin)) +
                          "}: expected ${NAME} (gputwin expands only plain variables of the file)");
    } else {
      while (end < text_.size() && is_name_char(text_[end], end == begin))
        ++end;
      if (end == begin) { // a lone $
        word_ += '$';
        ++pos_;
        return;
      }
    }
    const std::string name = text_.substr(begin, end - begin);
    const auto it = env.find(name);
    if (it == env.end())
      fail(line_, "$" + name + ": not assigned in the file (expected " + name + "=VALUE before it is used; gputwin "
                  "expands only the file's own variables)");
    word_ += it->second;
    pos_ = braced ? end + 1 : end;
  }

  // A quote before the word's first '=' makes it an ordinary word, not an assignment ("A=b" is one).
  void note_quote()
  {
    if (word_.find('=') == std::string::npos)
      name_quoted_ = true;
  }

  void count_lines(size_t begin, size_t end)
  {
    for (size_t i = begin; i < end; ++i)
      line_ += text_[i] == '\n' ? 1 : 0;
  }

  void finish_word(Command& command)
  {
    if (!in_word_)
      return;
    in_word_ = false;
    command.push_back(Word{word_, word_line_, !name_quoted_ && is_assignment(word_)});
  }

  // Assignments before a command (and `export NAME=value ...` lines) go into `env`; the rest is a command.
  static void finish_command(Command& command, std::vector<Command>& result, std::map<std::string, std::string>& env)
  {
    size_t first = 0;
    if (!command.empty() && command[0].text == "export")
      first = 1;
    while (first < command.size() && command[first].assignment) {
      const size_t eq = command[first].text.find('=');
      env[command[first].text.substr(0, eq)] = command[first].text.substr(eq + 1);
      ++first;
    }
    if (first < command.size())
      result.emplace_back(command.begin() + static_cast<std::ptrdiff_t>(first), command.end());
    command.clear();
  }

  const std::string& text_;
  const std::string& path_;
  size_t pos_ = 0;
  int line_ = 1;
  bool in_word_ = false, name_quoted_ = false;
  int word_line_ = 1;
  std::string word_;
};

bool ends_with(const std::string& text, const std::string& suffix)
{
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `--name value...` groups of words [begin, end); a word before the first `--name` throws unless `skip_loose`.
std::vector<LaunchArgument> group_arguments(const Command& words, size_t begin, size_t end, const std::string& path,
                                            bool skip_loose)
{
  std::vector<LaunchArgument> args;
  for (size_t i = begin; i < end; ++i) {
    const Word& w = words[i];
    if (w.text.compare(0, 2, "--") == 0 && w.text.size() > 2) {
      const size_t eq = w.text.find('=');
      LaunchArgument a{w.text.substr(0, eq), {}, w.line};
      if (eq != std::string::npos)
        a.values.push_back(w.text.substr(eq + 1));
      args.push_back(std::move(a));
    } else if (!args.empty() && (args.back().values.empty() || w.text[0] != '-' || !skip_loose)) {
      args.back().values.push_back(w.text);
    } else if (!skip_loose) {
      throw InputError(path + ":" + std::to_string(w.line) + ": '" + printable(w.text) +
                       "': expected an argument --NAME before a value");
    }
  }
  return args;
}

} // namespace

std::optional<WorldSize> world_size(const LaunchLine& launch, const std::string& path)
{
  auto count = [&](const std::string& name, const std::string& text, int line) {
    try {
      if (const int64_t v = parse_integer(name, text); v > 0)
        return v;
    } catch (const InputError&) {
    }
    throw InputError(path + ":" + (line > 0 ? std::to_string(line) + ":" : std::string()) + " " +
                     printable(name + ": expected a positive integer, got '" + text + "'"));
  };
  if (launch.launcher.find("torchrun") != std::string::npos ||
      launch.launcher.find("torch.distributed") != std::string::npos) {
    int64_t nodes = 1, per_node = 1;
    for (const LaunchArgument& a : launch.launcher_args) {
      std::string values;
      for (const std::string& v : a.values)
        values += (values.empty() ? "" : " ") + v;
      if (a.name == "--nnodes")
        nodes = count(a.name, values, a.line);
      else if (a.name == "--nproc-per-node" || a.name == "--nproc_per_node")
        per_node = count(a.name, values, a.line);
    }
    return WorldSize{checked_product({nodes, per_node}, (path + ": --nnodes x --nproc-per-node").c_str()),
                     std::to_string(nodes) + " nodes x " + std::to_string(per_node) + " processes"};
  }
  if (const auto it = launch.env.find("WORLD_SIZE"); it != launch.env.end())
    return WorldSize{count("WORLD_SIZE", it->second, 0), "WORLD_SIZE"};
  return std::nullopt;
}

std::string printable(const std::string& text)
{
  std::string out;
  for (const char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escape;
    } else {
      out += c;
    }
  }
  return out;
}

LaunchLine parse_launch_line(const std::string& text, const std::string& path)
{
  LaunchLine launch;
  const std::vector<Command> commands = Splitter(text, path).commands(launch.env);
  if (commands.empty())
    return launch;
  if (commands.size() > 1)
    throw InputError(path + ":" + std::to_string(commands[1].front().line) + ": '" +
                     printable(commands[1].front().text) + "': a second command (expected one launch line, with assignments of variables before it)");
  const Command& command = commands.front();
  size_t script = command.size();
  for (size_t i = 0; i < command.size() && script == command.size(); ++i)
    if (ends_with(command[i].text, ".py") && command[i].text[0] != '-')
      script = i;
  if (script == command.size()) {
    if (command.front().text.compare(0, 2, "--") != 0)
      throw InputError(path + ":" + std::to_string(command.front().line) + ": '" +
                       printable(command.front().text) + "': no training script in the command (expected `torchrun ... pretrain_gpt.py --num-layers "
                       "...`, or the script's arguments alone)");
    launch.script_args = group_arguments(command, 0, command.size(), path, false);
    return launch;
  }
  for (size_t i = 0; i < script; ++i)
    if (command[i].text.compare(0, 2, "--") != 0 && (i == 0 || command[i - 1].text.compare(0, 2, "--") != 0))
      launch.launcher += (launch.launcher.empty() ? "" : " ") + command[i].text;
  launch.launcher_args = group_arguments(command, 0, script, path, true);
  launch.script = command[script].text;
  launch.script_args = group_arguments(command, script + 1, command.size(), path, false);
  return launch;
}

} // namespace gputwin::cli
