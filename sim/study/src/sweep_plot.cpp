#include "gputwin/sim/sweep_plot.hpp"

#include "gputwin/common/interrupt.hpp"
#include "gputwin/common/output_file.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <utility>

namespace gputwin::sim {

namespace {

std::string gnuplot_quoted(std::string text)
{
  for (char& c : text)
    if (c == '"' || c == '\\' || c == '\n')
      c = '_';
  return '"' + text + '"';
}

// An anonymous temporary file (removed by the system when closed, also when the process is killed), closed on
// destruction.
struct AnonymousFile {
  std::FILE* file = std::tmpfile();
  ~AnonymousFile()
  {
    if (file != nullptr)
      std::fclose(file);
  }
  AnonymousFile() = default;
  AnonymousFile(const AnonymousFile&) = delete;
  AnonymousFile& operator=(const AnonymousFile&) = delete;
  int fd() const { return fileno(file); }
  // Everything in the file, from its start.
  std::string contents() const
  {
    std::string data;
    if (::lseek(fd(), 0, SEEK_SET) != 0)
      return data;
    char buffer[65536];
    for (ssize_t n; (n = ::read(fd(), buffer, sizeof buffer)) != 0;) {
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        break;
      data.append(buffer, static_cast<size_t>(n));
    }
    return data;
  }
};

} // namespace

std::string run_gnuplot(const std::string& script)
{
  AnonymousFile input, image, log;
  if (input.file == nullptr || image.file == nullptr || log.file == nullptr)
    throw OutputError(std::string("--plot: cannot create a temporary file for gnuplot: ") + std::strerror(errno));
  if (std::fwrite(script.data(), 1, script.size(), input.file) != script.size() || std::fflush(input.file) != 0 ||
      ::lseek(input.fd(), 0, SEEK_SET) != 0)
    throw OutputError(std::string("--plot: cannot write gnuplot's script: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw OutputError(std::string("--plot: cannot start gnuplot: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
    ignore_interrupts_in_child();
    ::dup2(input.fd(), STDIN_FILENO);
    ::dup2(image.fd(), STDOUT_FILENO);
    ::dup2(log.fd(), STDERR_FILENO);
    ::execlp("gnuplot", "gnuplot", static_cast<char*>(nullptr));
    const std::string why = std::string("cannot run gnuplot: ") + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, why.data(), why.size());
    ::_exit(127);
  }
  register_child(pid);
  // Wait without reaping, forget the child, then reap it: its id cannot be reused while the handler may kill it.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  forget_child(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::istringstream errors(log.contents());
    std::string first;
    for (std::string line; std::getline(errors, line);)
      if (!line.empty() && line.find_first_not_of(" ^") != std::string::npos) {
        first = line;
        break;
      }
    const std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exit status " + std::to_string(WEXITSTATUS(status));
    throw OutputError("--plot: gnuplot failed (" + how + ")" + (first.empty() ? "" : ": " + first));
  }
  std::string content = image.contents();
  if (content.empty())
    throw OutputError("--plot: gnuplot wrote no image");
  return content;
}

std::string sweep_plot_script(const std::vector<SweepRow>& rows, bool svg)
{
  const bool have_tokens = !rows.empty() && std::isfinite(rows.front().time_to_train_s);
  const bool have_price = !rows.empty() && std::isfinite(rows.front().cost);
  std::ostringstream s;
  std::vector<std::pair<std::string, std::string>> series; // (cluster, model) in first-seen order
  for (const SweepRow& r : rows) {
    const std::pair<std::string, std::string> key{r.cluster, r.model};
    if (std::find(series.begin(), series.end(), key) != series.end())
      continue;
    s << "$series" << series.size() << " << EOD\n";
    series.push_back(key);
    for (const SweepRow& p : rows)
      if (p.cluster == r.cluster && p.model == r.model) {
        const double train = have_tokens ? p.time_to_train_s / 86400 : p.iteration_time_s;
        const double money = have_price    ? p.cost
                             : have_tokens ? p.gpu_hours
                                           : static_cast<double>(p.gpus) * p.iteration_time_s;
        char line[256];
        std::snprintf(line, sizeof line, "%lld %.9g %.9g %.9g %.9g\n", static_cast<long long>(p.gpus), p.tokens_per_s,
                      100 * p.mfu, train, money);
        s << line;
      }
    s << "EOD\n";
  }
  const std::string panels[4][2] = {
      {"Throughput", "tokens/s"},
      {"Model FLOPs utilization", "MFU (%)"},
      {have_tokens ? "Time to train" : "Iteration time", have_tokens ? "time to train (days)" : "iteration time (s)"},
      {have_price    ? "Cost"
       : have_tokens ? "GPU-hours"
                     : "GPU-seconds per iteration",
       have_price    ? "cost (GPU-hours x price per GPU-hour)"
       : have_tokens ? "GPU-hours"
                     : "GPU-seconds"}};
  s << (svg ? "set terminal svg size 1400,1000 dynamic font 'Sans,12'\n"
            : "set terminal pngcairo size 1400,1000 font 'Sans,11'\n");
  s << "set termoption noenhanced\n"; // no `set output`: the image goes to standard output
  s << "set multiplot layout 2,2 title \"gputwin sweep: best plan per point\"\n";
  s << "set logscale x 2\nset format x '%g'\nset xlabel 'GPUs'\nset grid\n";
  s << "set key below horizontal\n"; // under each panel: a legend never covers a line
  for (int panel = 0; panel < 4; ++panel) {
    s << "set title " << gnuplot_quoted(panels[panel][0]) << "\nset ylabel " << gnuplot_quoted(panels[panel][1])
      << "\n";
    s << (panel >= 2 ? "set logscale y\n" : "unset logscale y\n");
    s << "plot ";
    for (size_t i = 0; i < series.size(); ++i)
      s << (i ? ", \\\n     " : "") << "$series" << i << " using 1:" << panel + 2
        << " with linespoints lw 2 pt 7 title " << gnuplot_quoted(series[i].first + " " + series[i].second);
    s << "\n";
  }
  s << "unset multiplot\n";
  return s.str();
}

void write_sweep_plot(const std::string& path, const std::vector<SweepRow>& rows)
{
  const bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
  write_file_atomically(path, run_gnuplot(sweep_plot_script(rows, svg)), "--plot");
}

} // namespace gputwin::sim
