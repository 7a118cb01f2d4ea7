#include "subcommand_runner.hpp"

#include "gputwin/sim/isolated_run.hpp"
#include "commands.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/common/output_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace gputwin::python {

namespace {

constexpr char report_letter = 'R', input_error_letter = 'I', internal_error_letter = 'L', failed_letter = 'F';

char letter_of(Outcome outcome)
{
  switch (outcome) {
  case Outcome::Report: return report_letter;
  case Outcome::InputError: return input_error_letter;
  case Outcome::InternalError: return internal_error_letter;
  case Outcome::Failed: return failed_letter;
  }
  return failed_letter;
}

// The child's answer: the outcome's letter, the exit status, a space, the notes' length in bytes, a newline, the
// notes, then the text (to the end).
std::string encode(const SubcommandResult& result)
{
  return std::string(1, letter_of(result.outcome)) + std::to_string(result.exit_status) + " " +
         std::to_string(result.notes.size()) + "\n" + result.notes + result.text;
}

SubcommandResult decode(const std::string& answer, const std::string& name)
{
  const auto malformed = [&] { return std::runtime_error("gputwin " + name + ": malformed answer from its process"); };
  SubcommandResult result;
  if (answer.empty())
    throw malformed();
  switch (answer[0]) {
  case report_letter: result.outcome = Outcome::Report; break;
  case input_error_letter: result.outcome = Outcome::InputError; break;
  case internal_error_letter: result.outcome = Outcome::InternalError; break;
  case failed_letter: result.outcome = Outcome::Failed; break;
  default: throw malformed();
  }
  const size_t newline = answer.find('\n');
  if (newline == std::string::npos)
    throw malformed();
  std::istringstream header(answer.substr(1, newline - 1));
  size_t notes_bytes = 0;
  if (!(header >> result.exit_status >> notes_bytes) || answer.size() - newline - 1 < notes_bytes)
    throw malformed();
  result.notes = answer.substr(newline + 1, notes_bytes);
  result.text = answer.substr(newline + 1 + notes_bytes);
  return result;
}

// In the child: its stdout and stderr (file descriptors 1 and 2, so SimGrid's and C stdio's output too) sent to an
// anonymous temporary file, read back by take(). Without a temporary file they stay the inherited ones.
class CapturedOutput {
public:
  CapturedOutput()
  {
    file_ = std::tmpfile();
    if (file_ == nullptr)
      return;
    dup2(fileno(file_), STDOUT_FILENO);
    dup2(fileno(file_), STDERR_FILENO);
  }
  CapturedOutput(const CapturedOutput&) = delete;
  CapturedOutput& operator=(const CapturedOutput&) = delete;

  // Everything written so far.
  std::string take()
  {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    if (file_ == nullptr)
      return {};
    std::string captured;
    char buffer[65536];
    for (off_t offset = 0;;) {
      const ssize_t n = pread(fileno(file_), buffer, sizeof buffer, offset);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      captured.append(buffer, static_cast<size_t>(n));
      offset += n;
    }
    return captured;
  }

private:
  std::FILE* file_ = nullptr;
};

// In the child: runs the subcommand, every exception sorted as the CLI sorts it into exit statuses.
SubcommandResult run_here(const cli::Subcommand& subcommand, const std::vector<std::string>& args)
{
  CapturedOutput captured;
  SubcommandResult result;
  std::ostringstream report;
  try {
    result.exit_status = subcommand.run(args, report);
    result.text = report.str();
  } catch (const InputError& e) {
    result.outcome = Outcome::InputError;
    result.text = e.what();
  } catch (const OutputError& e) {
    result.outcome = Outcome::InputError;
    result.text = e.what();
  } catch (const std::logic_error& e) {
    result.outcome = Outcome::InternalError;
    result.text = e.what();
  } catch (const std::exception& e) {
    result.outcome = Outcome::Failed;
    result.text = e.what();
  } catch (...) {
    result.outcome = Outcome::Failed;
    result.text = "unknown exception";
  }
  result.notes = captured.take();
  return result;
}

} // namespace

SubcommandResult run_subcommand(const std::string& name, const std::vector<std::string>& args,
                                const std::function<void()>& on_wait)
{
  const cli::Subcommand* subcommand = nullptr;
  std::string names;
  for (const cli::Subcommand& s : cli::gputwin_subcommands()) {
    if (s.name == name)
      subcommand = &s;
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  }
  if (subcommand == nullptr)
    throw InputError("unknown subcommand '" + name + "' (expected one of " + names + ")");

  sim::IsolatedRunCallbacks callbacks;
  callbacks.on_idle = on_wait;
  callbacks.describe = [&](size_t) { return "gputwin " + name; };
  const std::vector<std::string> answers =
      sim::run_isolated(1, 1, [&](size_t) { return encode(run_here(*subcommand, args)); }, callbacks);
  return decode(answers.front(), name);
}

} // namespace gputwin::python
