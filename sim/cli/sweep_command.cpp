// `gputwin sweep`: the best plan of every (model, cluster, GPU count) point — the search of `gputwin search`
// (search_core.hpp) at each point, the fastest simulated plan kept — with time to train, GPU-hours and cost,
// as a table, JSON or CSV, and plotted by gnuplot.
//
// Scale-out: every point runs in its own forked process (sim/isolated_run.hpp), `--jobs N` of them at once, their
// results collected in point order, so the output does not depend on N. `--shard K/N` (or a Slurm job array's
// environment, shard.hpp) runs the points i with i mod N = K - 1, and `--merge A.csv B.csv ...` joins the shards'
// CSVs (sweep_csv.hpp writes and reads one): it orders the rows by their `point` column (the point's index in the
// whole sweep) and recomputes the one column that depends on other points (scaling efficiency, against the smallest
// point of the same model and cluster; a shard leaves it empty) from the rows' tokens/s, which the CSV writes
// exactly (%.17g round-trips), so the merged file is byte for byte the one an unsharded run writes.
#include "gputwin/sim/report_json.hpp"
#include "gputwin/common/text.hpp"
#include "gputwin/sim/isolated_run.hpp"
#include "commands.hpp"
#include "gputwin/common/progress.hpp"
#include "resource_estimate.hpp"
#include "search_core.hpp"
#include "shard.hpp"
#include "sweep_csv.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/interrupt.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <type_traits>

namespace gputwin::cli {

namespace {

constexpr int64_t max_gpus = 1000000;

std::vector<std::string> split_list(const std::string& flag, const std::string& text)
{
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    if (item.empty())
      throw InputError(flag + ": expected a comma-separated list without empty items, got '" + text + "'");
    items.push_back(item);
    begin = end + 1;
  }
  return items;
}

bool parse_count(const std::string& text, int64_t& value)
{
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  char* rest = nullptr;
  const long long v = std::strtoll(text.c_str(), &rest, 10);
  if (*rest != '\0' || v < 1 || v > max_gpus)
    return false;
  value = v;
  return true;
}

// "64,128,256" or "START:END:xFACTOR" / "START:END:+STEP" (64:1024:x2), ascending, without duplicates.
std::vector<int64_t> parse_gpu_counts(const std::string& text)
{
  const auto bad = [&](const std::string& why) {
    return InputError("--gpus: expected positive GPU counts as a list (64,128,256) or a range START:END:xFACTOR or "
                      "START:END:+STEP (64:1024:x2), got '" +
                      text + "' (" + why + ")");
  };
  const std::string limit = "a whole number from 1 to " + std::to_string(max_gpus);
  std::vector<int64_t> counts;
  if (text.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    for (std::string part; std::getline(stream, part, ':');)
      parts.push_back(part);
    if (!text.empty() && text.back() == ':')
      parts.emplace_back();
    int64_t start = 0, end = 0, step = 0;
    if (parts.size() != 3)
      throw bad("a range has three parts, START:END:xFACTOR");
    if (!parse_count(parts[0], start))
      throw bad("START '" + parts[0] + "' is not " + limit);
    if (!parse_count(parts[1], end))
      throw bad("END '" + parts[1] + "' is not " + limit);
    if (end < start)
      throw bad("END " + parts[1] + " is below START " + parts[0]);
    const char kind = parts[2].empty() ? '\0' : parts[2][0];
    if ((kind != 'x' && kind != '+') || !parse_count(parts[2].substr(1), step))
      throw bad("the step '" + parts[2] + "' is not xFACTOR or +STEP with a whole number");
    if (kind == 'x' && step < 2)
      throw bad("a factor must be at least 2");
    for (int64_t n = start; n <= end; n = kind == 'x' ? n * step : n + step)
      counts.push_back(n);
  } else {
    for (const std::string& item : split_list("--gpus", text)) {
      int64_t n = 0;
      if (!parse_count(item, n))
        throw bad("'" + item + "' is not " + limit);
      counts.push_back(n);
    }
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

double positive_number(const ParsedArgs& parsed, const std::string& flag, bool allow_zero)
{
  const std::string text = *parsed.value(flag);
  double v = -1;
  try {
    v = parse_number(flag, text); // decimal only: no "0x10", "inf", "nan"
  } catch (const InputError&) {
    v = -1;
  }
  if (v < 0 || (!allow_zero && v == 0))
    throw InputError(flag + ": expected a " + (allow_zero ? "non-negative" : "positive") + " number, got '" + text +
                     "'");
  return v;
}

// The price of one GPU-hour of each cluster of the sweep (by --cluster position) from --price-per-gpu-hour: one
// number for every cluster, or NAME=P for each cluster (NAME as given to --cluster, or the cluster file's name).
// InputError naming the flag for a cluster without a price, a price for a cluster not in the sweep, a cluster
// priced twice, or a price that is not a non-negative number.
std::vector<double> cluster_prices(const std::string& text, const std::vector<std::string>& cluster_names,
                                   const std::vector<topo::ClusterSpec>& nodes)
{
  const std::string flag = "--price-per-gpu-hour";
  const auto price = [&](const std::string& number) {
    double v = -1;
    try {
      v = parse_number(flag, number); // decimal only: no "0x10", "inf", "nan"
    } catch (const InputError&) {
      v = -1;
    }
    if (v < 0)
      throw InputError(flag + ": expected a non-negative number or NAME=P,... per cluster, got '" + text + "'");
    return v;
  };
  if (text.find('=') == std::string::npos)
    return std::vector<double>(cluster_names.size(), price(text));
  std::vector<double> prices(cluster_names.size(), NAN);
  for (const std::string& item : split_list(flag, text)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(flag + ": expected NAME=P for each cluster (dgx-h100=2.5,gb200-nvl72=6), got '" + item + "'");
    const std::string name = item.substr(0, eq);
    bool in_sweep = false;
    for (size_t c = 0; c < cluster_names.size(); ++c) {
      if (cluster_names[c] != name && nodes[c].name != name)
        continue;
      if (!std::isnan(prices[c]))
        throw InputError(flag + ": two prices for " + cluster_names[c]);
      prices[c] = price(item.substr(eq + 1));
      in_sweep = true;
    }
    if (!in_sweep) {
      std::string sweep;
      for (const std::string& cluster : cluster_names)
        sweep += (sweep.empty() ? "" : ",") + cluster;
      throw InputError(flag + ": a price for " + name + ", which is not a cluster of --cluster (" + sweep + ")");
    }
  }
  for (size_t c = 0; c < cluster_names.size(); ++c)
    if (std::isnan(prices[c]))
      throw InputError(flag + ": no price for " + cluster_names[c] + " (expected NAME=P for each cluster of --cluster, "
                       "or one price for all)");
  return prices;
}

// Tokens/s per GPU against the smallest point of the same model and cluster.
void compute_scaling_efficiency(std::vector<SweepRow>& rows)
{
  std::map<std::pair<std::string, std::string>, const SweepRow*> smallest;
  for (const SweepRow& r : rows) {
    const SweepRow*& s = smallest[{r.model, r.cluster}];
    if (s == nullptr || r.gpus < s->gpus)
      s = &r;
  }
  for (SweepRow& r : rows) {
    const SweepRow* s = smallest[{r.model, r.cluster}];
    r.scaling_efficiency =
        (r.tokens_per_s / static_cast<double>(r.gpus)) / (s->tokens_per_s / static_cast<double>(s->gpus));
  }
}

// The flags that decide a sweep's points and rows, in a fixed order (the identity of its CSVs, shard.hpp): not the
// ones that only say how it runs or where it writes (--jobs, --shard, --csv, --plot, --json, --max-work).
std::string sweep_flags(const ParsedArgs& parsed)
{
  std::string flags = "--model " + parsed.value("--model").value_or("gpt3-175b");
  for (const std::string& arg : model_flag_arguments(parsed))
    flags += " " + arg;
  for (const char* flag : {"--cluster", "--set", "--gpus", "--global-batch", "--tokens", "--price-per-gpu-hour",
                           "--attention", "--cp", "--top", "--gpu-model", "--framework", "--precision"})
    for (const std::string& value : parsed.values(flag))
      flags += std::string(" ") + flag + " " + value;
  for (const char* flag : {"--fp8", "--no-overlaps"})
    if (parsed.has(flag))
      flags += std::string(" ") + flag;
  return flags;
}

std::string point_name(const std::string& model, int64_t gpus, const std::string& cluster)
{
  return model + " on " + std::to_string(gpus) + " GPUs of " + cluster;
}

void write_table(std::ostream& out, const std::vector<SweepRow>& rows)
{
  char line[512];
  std::snprintf(line, sizeof line, "%-12s %-10s %6s  %-52s %-9s %-13s %9s %12s %6s %10s %12s %12s %7s\n", "model",
                "cluster", "GPUs", "best plan", "attention", "overlaps", "iter s", "tokens/s", "MFU", "train days",
                "GPU-hours", "cost", "scaling");
  out << line;
  for (const SweepRow& r : rows) {
    const ParallelPlan& p = r.plan;
    char plan_text[128];
    const std::string tp_cp = "tp " + std::to_string(p.tp) + (p.cp > 1 ? " cp " + std::to_string(p.cp) : "");
    std::snprintf(plan_text, sizeof plan_text, "%s pp %lld dp %lld mb %lld %s%s %s%s", tp_cp.c_str(),
                  static_cast<long long>(p.pp), static_cast<long long>(p.dp), static_cast<long long>(p.micro_batch),
                  to_string(p.schedule).c_str(),
                  p.schedule == Schedule::Interleaved ? (" v" + std::to_string(p.chunks)).c_str() : "",
                  to_string(p.recompute).c_str(), p.quantized() ? (" " + to_string(p.precision)).c_str() : "");
    const std::string scaling =
        std::isfinite(r.scaling_efficiency) ? csv_number("%.1f%%", 100 * r.scaling_efficiency) : "-";
    std::snprintf(line, sizeof line, "%-12s %-10s %6lld  %-52s %-9s %-13s %9.4f %12.0f %5.1f%% %10s %12s %12s %7s\n",
                  r.model.c_str(), r.cluster.c_str(), static_cast<long long>(r.gpus), plan_text,
                  to_string(p.attention).c_str(), sim::overlaps_text(r.options).c_str(), r.iteration_time_s,
                  r.tokens_per_s, 100 * r.mfu, csv_number("%.2f", r.time_to_train_s / 86400).c_str(),
                  csv_number("%.0f", r.gpu_hours).c_str(), csv_number("%.0f", r.cost).c_str(), scaling.c_str());
    out << line;
  }
}

void write_json(std::ostream& out, const std::vector<SweepRow>& rows)
{
  JsonWriter w(out);
  w.begin_array();
  for (const SweepRow& r : rows) {
    w.begin_object();
    w.field("model", r.model);
    w.field("cluster", r.cluster);
    w.field("gpus", r.gpus);
    sim::write_plan_json(w, r.plan);
    sim::write_overlaps_json(w, r.options);
    w.field("iteration_time_s", r.iteration_time_s);
    w.field("tokens_per_s", r.tokens_per_s);
    w.field("mfu", r.mfu);
    w.field("peak_memory_bytes", r.peak_memory_bytes);
    w.field("time_to_train_s", r.time_to_train_s);
    w.field("gpu_hours", r.gpu_hours);
    w.field("cost", r.cost);
    w.field("scaling_efficiency", r.scaling_efficiency);
    w.field("point", static_cast<int64_t>(r.point));
    w.end_object();
  }
  w.end_array();
  out << "\n";
}

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

// Runs gnuplot on `script` (its standard input) and returns what it wrote on standard output: the image. No shell
// and no files under a name: gnuplot dies with this process (PR_SET_PDEATHSIG; Ctrl-C kills it through
// common/interrupt.hpp), and what it was given and wrote vanishes with it. Throws OutputError "--plot: ..." when
// gnuplot cannot be started, fails (its first line of errors) or writes nothing.
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

// The gnuplot script of the sweep's plot: one data block per (cluster, model) series, then the four panels.
std::string plot_script(const std::vector<SweepRow>& rows, bool have_tokens, bool have_price, bool svg)
{
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
  s << "set logscale x 2\nset format x '%g'\nset xlabel 'GPUs'\nset grid\nset key top left\n";
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

// Throughput, MFU, time to train (else iteration time) and cost (else GPU-hours, else GPU count x iteration
// time) against GPU count, one line per (cluster, model), drawn by gnuplot and written to `path` atomically.
void render_plot(const std::string& path, const std::vector<SweepRow>& rows, bool have_tokens, bool have_price)
{
  const bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
  write_file_atomically(path, run_gnuplot(plot_script(rows, have_tokens, have_price, svg)), "--plot");
}

// The identity lines (line 1) of sweep CSVs, checked to be every shard of one sweep once (check_one_sweep).
SweepIdentity read_sweep_identities(const std::vector<std::string>& files)
{
  std::vector<std::pair<std::string, SweepIdentity>> identities;
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
      throw InputError("--merge: cannot read '" + file + "': " + std::strerror(errno));
    identities.emplace_back(file, read_sweep_csv_identity(in, file));
  }
  check_one_sweep(identities);
  SweepIdentity whole = identities.front().second;
  whole.shard = Shard{};
  return whole;
}

// The rows of sweep CSVs (--merge), in point order, with the scaling efficiency recomputed over all of them.
// Throws InputError naming `file:line` when a file is not a sweep CSV, the headers differ, or two files hold the
// same point (shards overlap). The identity lines are read_sweep_identities'.
std::vector<SweepRow> read_sweep_csvs(const std::vector<std::string>& files)
{
  std::string first_file;
  std::vector<SweepRow> rows;
  std::map<size_t, std::string> where_point;
  std::map<std::tuple<std::string, std::string, int64_t>, std::string> where_key;
  std::string where_pattern;
  std::pair<bool, bool> pattern{};
  const auto add_row = [&](const SweepRow& r, const std::string& where) {
    const std::string name = point_name(printable_excerpt(r.model), r.gpus, printable_excerpt(r.cluster)); // one line
    if (const auto it = where_point.find(r.point); it != where_point.end())
      throw InputError("--merge: " + where + ": point " + std::to_string(r.point) + " (" + name + ") is also in " +
                       it->second + ": the files overlap (the shards of one sweep are disjoint)");
    if (const auto it = where_key.find({r.model, r.cluster, r.gpus}); it != where_key.end())
      throw InputError("--merge: " + where + ": " + name + " is also in " + it->second +
                       ": the files overlap (the shards of one sweep are disjoint)");
    where_point[r.point] = where;
    where_key[{r.model, r.cluster, r.gpus}] = where;
    const std::pair<bool, bool> have{std::isfinite(r.time_to_train_s), std::isfinite(r.cost)};
    if (where_pattern.empty()) {
      where_pattern = where;
      pattern = have;
    } else if (have != pattern) {
      throw InputError("--merge: " + where + ": time_to_train_s and cost are " + (have.first ? "given" : "empty") +
                       "/" + (have.second ? "given" : "empty") + " but " + (pattern.first ? "given" : "empty") + "/" +
                       (pattern.second ? "given" : "empty") + " in " + where_pattern +
                       " (shards of sweeps with different --tokens/--price-per-gpu-hour)");
    }
    rows.push_back(r);
  };
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
      throw InputError("--merge: cannot read '" + file + "': " + std::strerror(errno));
    read_sweep_csv(in, file, first_file, add_row);
    if (first_file.empty())
      first_file = file;
  }
  std::sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) { return a.point < b.point; });
  if (!rows.empty())
    compute_scaling_efficiency(rows);
  return rows;
}

// --plot's file name checked and gnuplot found, before any work.
void check_plot(const std::optional<std::string>& plot)
{
  if (!plot)
    return;
  const auto ends_with = [&](const char* suffix) {
    const std::string s = suffix;
    return plot->size() > s.size() && plot->compare(plot->size() - s.size(), s.size(), s) == 0;
  };
  if (!ends_with(".png") && !ends_with(".svg"))
    throw InputError("--plot: expected a file ending in .png or .svg, got '" + *plot + "'");
  if (std::system("gnuplot --version >/dev/null 2>&1") != 0)
    throw InputError("--plot: gnuplot not found (install the Debian package gnuplot-nox: apt-get install gnuplot-nox)");
}

// The CSV file of --csv or --output (-o): the same thing, for a sweep and for --merge.
std::optional<std::string> csv_output(const ParsedArgs& parsed)
{
  if (parsed.has("--csv") && parsed.has("--output"))
    throw InputError("--output: the same as --csv; give one of them");
  return parsed.has("--csv") ? parsed.value("--csv") : parsed.value("--output");
}

void render_outputs(const ParsedArgs& parsed, const SweepIdentity& identity, const std::vector<SweepRow>& rows)
{
  if (const auto file = csv_output(parsed))
    write_file_atomically(
        *file, [&](std::ostream& csv) { write_sweep_csv(csv, identity, rows); },
        parsed.has("--csv") ? "--csv" : "--output");
  if (const auto plot = parsed.value("--plot"); plot && !rows.empty())
    render_plot(*plot, rows, std::isfinite(rows.front().time_to_train_s), std::isfinite(rows.front().cost));
}

// `gputwin sweep --merge A.csv B.csv ... [-o ALL.csv] [--plot FILE]`.
int run_merge(const ParsedArgs& parsed, std::ostream& out)
{
  for (const char* flag : {"--model", "--hidden", "--heads", "--layers", "--seq-len", "--vocab", "--cluster", "--set",
                           "--gpus", "--global-batch", "--tokens", "--price-per-gpu-hour", "--attention", "--cp",
                           "--no-overlaps", "--fp8", "--precision", "--top",
                           "--max-work", "--gpu-model", "--framework", "--jobs", "--shard", "--json"})
    if (parsed.has(flag))
      throw InputError(std::string(flag) + ": not used with --merge (it joins CSV files: gputwin sweep --merge A.csv "
                                           "B.csv ... [-o ALL.csv] [--plot FILE])");
  const std::vector<std::string>& files = parsed.positional();
  if (files.empty())
    throw InputError("--merge: expected the CSV files to join (gputwin sweep --merge A.csv B.csv ... -o ALL.csv)");
  check_plot(parsed.value("--plot"));
  csv_output(parsed);
  check_output_flags(parsed, {"--csv", "--output", "--plot"}); // before reading: a typo fails at once
  const SweepIdentity identity = read_sweep_identities(files);
  const std::vector<SweepRow> rows = read_sweep_csvs(files);
  if (rows.empty())
    throw InputError("--merge: the files hold no rows (no point of the sweep has a plan that fits)");
  render_outputs(parsed, identity, rows);
  if (csv_output(parsed))
    write_table(out, rows);
  else
    write_sweep_csv(out, identity, rows);
  return 0;
}

// What the process of one point sends back: 'R' and the best plan as JSON (simulated_candidate_json), or 'S' and
// why the point is skipped.

struct PointSpec {
  size_t model = 0, cluster = 0;
  int64_t gpus = 0;
};

// Every input of a sweep, checked before the first point runs, and the points this shard runs.
struct SweepSetup {
  std::vector<GptConfig> models;
  std::vector<int64_t> gpu_counts;
  std::vector<std::string> cluster_names, sets;
  std::vector<topo::ClusterSpec> nodes; // one node of each cluster: its name, GPU and node size
  std::optional<int64_t> global_batch;
  bool have_tokens = false, have_price = false;
  double tokens = NAN;
  std::vector<double> prices; // of one GPU-hour, by cluster (cluster_names' order); empty without a price
  int64_t top = 1, jobs = 1;
  int threads = 1;
  std::optional<AttentionKernel> attention;
  std::optional<std::vector<int64_t>> context_parallel;
  sim::SearchSpace space;
  FrameworkProfile ampere_framework, hopper_framework;
  bool json = false;
  Shard shard;
  std::vector<PointSpec> points; // in sweep order (model, cluster, GPU count)
  std::vector<size_t> selected;  // this shard's
  // "gpt-22b on 16 dgx-a100 GPUs, global batch 16"
  std::string describe(size_t i) const
  {
    const PointSpec& p = points[i];
    return point_name(models[p.model].name, p.gpus, nodes[p.cluster].name) + ", global batch " +
           std::to_string(global_batch.value_or(p.gpus));
  }
};

// The models of --model NAME[,...], each with the other model flags applied.
std::vector<GptConfig> sweep_models(const ParsedArgs& parsed)
{
  std::vector<GptConfig> models;
  for (const std::string& name : split_list("--model", parsed.value("--model").value_or("gpt3-175b"))) {
    std::vector<std::string> model_args = {"--model", name};
    for (const std::string& arg : model_flag_arguments(parsed))
      model_args.push_back(arg);
    ArgParser model_parser("gputwin sweep", "");
    add_model_flags(model_parser);
    models.push_back(model_from_flags(model_parser.parse(model_args)));
  }
  return models;
}

// --jobs when given, checked.
std::optional<int64_t> checked_jobs(const ParsedArgs& parsed)
{
  const std::optional<int64_t> jobs = parsed.integer("--jobs");
  if (jobs && (*jobs < 1 || *jobs > 1024))
    throw InputError("--jobs: expected an integer in [1, 1024], got " + *parsed.value("--jobs"));
  return jobs;
}

// Points at once: --jobs, else one per core (at most the points); and the cores left over for each point's search.
std::pair<int64_t, int> points_at_once(std::optional<int64_t> jobs_given, size_t points)
{
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t jobs = jobs_given.value_or(std::clamp<int64_t>(static_cast<int64_t>(points), 1, cores));
  return {jobs, static_cast<int>(std::max<int64_t>(1, cores / jobs))};
}

SweepSetup read_sweep_setup(const ParsedArgs& parsed)
{
  // Every input checked before the first point runs.
  std::vector<GptConfig> models = sweep_models(parsed);
  if (!parsed.has("--gpus"))
    throw InputError("--gpus: required (GPU counts: 64,128,256 or 64:1024:x2)");
  const std::vector<int64_t> gpu_counts = parse_gpu_counts(*parsed.value("--gpus"));
  const std::vector<std::string> cluster_names =
      split_list("--cluster", parsed.value("--cluster").value_or(topo::default_cluster));
  const std::vector<std::string> sets = parsed.values("--set");
  std::vector<topo::ClusterSpec> nodes; // one node of each cluster: its name, GPU and node size
  for (const std::string& name : cluster_names) {
    const topo::ClusterSpec node = topo::load_cluster(name, 1, sets);
    for (const int64_t gpus : gpu_counts)
      if (gpus > node.gpus_per_node && gpus % node.gpus_per_node != 0)
        throw InputError("--gpus: " + std::to_string(gpus) + " is not a multiple of " + node.name + "'s " +
                         std::to_string(node.gpus_per_node) + " GPUs per node (expected whole nodes)");
    compute_model_for_gpu(parsed, node.gpu);
    ParallelPlan precision_plan;
    precision_plan.precision = read_precision(parsed);
    check_precision_supported(precision_plan, node);
    nodes.push_back(node);
  }
  std::optional<int64_t> global_batch;
  if (parsed.has("--global-batch")) {
    global_batch = parsed.integer("--global-batch");
    if (!global_batch || *global_batch < 1)
      throw InputError("--global-batch: expected a positive integer, got " + *parsed.value("--global-batch"));
  }
  const bool have_tokens = parsed.has("--tokens"), have_price = parsed.has("--price-per-gpu-hour");
  const double tokens = have_tokens ? positive_number(parsed, "--tokens", false) : NAN;
  std::vector<double> prices = // per cluster of --cluster; empty without --price-per-gpu-hour
      have_price ? cluster_prices(*parsed.value("--price-per-gpu-hour"), cluster_names, nodes) : std::vector<double>{};
  if (have_price && !have_tokens)
    throw InputError("--price-per-gpu-hour: needs --tokens (the cost is of training on T tokens)");
  const int64_t top = parsed.integer("--top").value_or(1);
  if (top < 1)
    throw InputError("--top: expected a positive integer, got " + *parsed.value("--top"));
  const std::optional<int64_t> jobs_given = checked_jobs(parsed);
  // The plans' attention kernel: --attention, else each cluster's default (default_attention_kernel); the
  // context-parallel sizes: --cp, else each point's default (sim::default_context_parallel).
  std::optional<AttentionKernel> attention;
  if (const auto kernel = parsed.value("--attention")) {
    attention = parse_attention(*kernel);
    if (!attention)
      throw InputError("--attention: expected unfused|flash, got '" + *kernel + "'");
  }
  std::optional<std::vector<int64_t>> context_parallel;
  if (const auto list = parsed.value("--cp")) {
    context_parallel.emplace();
    for (const std::string& item : split_list("--cp", *list)) {
      int64_t cp = 0;
      if (!parse_count(item, cp))
        throw InputError("--cp: expected a comma-separated list of positive integers, got '" + *list + "'");
      context_parallel->push_back(cp);
    }
  }
  for (const topo::ClusterSpec& node : nodes) {
    const AttentionKernel kernel = attention.value_or(default_attention_kernel(node.gpu.generation));
    if (context_parallel && *context_parallel != std::vector<int64_t>{1} && kernel != AttentionKernel::Flash)
      throw InputError("--cp: context parallelism needs flash attention, and the plans on " + node.name +
                       " use unfused (expected --attention flash)");
    if (!attention && kernel == AttentionKernel::Flash)
      std::cerr << "gputwin sweep: note: --attention flash on " << node.name << ": the default on "
                << to_string(node.gpu.generation) << " GPUs (Transformer Engine's fused attention; --attention "
                << "unfused for Megatron 2022's kernels)\n";
  }
  sim::SearchSpace space;
  space.precision = read_precision(parsed);
  space.overlaps = !parsed.has("--no-overlaps");
  const std::optional<std::string> plot = parsed.value("--plot");
  check_plot(plot);
  csv_output(parsed);
  check_output_flags(parsed, {"--csv", "--output", "--plot"}); // before any point runs
  // Without --framework each point's cluster gets the framework of its GPU generation (default_framework_for).
  const FrameworkProfile ampere_framework = framework_from_flags(parsed, default_framework_for(GpuGeneration::Ampere));
  const FrameworkProfile hopper_framework = framework_from_flags(parsed, default_framework_for(GpuGeneration::Hopper));
  const bool json = parsed.has("--json");
  const Shard shard = parsed.has("--shard")
                          ? parse_shard(*parsed.value("--shard"))
                          : shard_from_slurm([](const char* name) { return std::getenv(name); }).value_or(Shard{});

  // The points in sweep order (model, cluster, GPU count), and this shard's.
  std::vector<PointSpec> points;
  for (size_t m = 0; m < models.size(); ++m)
    for (size_t c = 0; c < cluster_names.size(); ++c)
      for (const int64_t gpus : gpu_counts)
        points.push_back(PointSpec{m, c, gpus});
  std::vector<size_t> selected;
  for (size_t i = 0; i < points.size(); ++i)
    if (shard.contains(i))
      selected.push_back(i);

  const auto [jobs, threads] = points_at_once(jobs_given, selected.size());

  SweepSetup setup;
  setup.models = std::move(models);
  setup.gpu_counts = gpu_counts;
  setup.cluster_names = cluster_names;
  setup.sets = sets;
  setup.nodes = std::move(nodes);
  setup.global_batch = global_batch;
  setup.have_tokens = have_tokens;
  setup.have_price = have_price;
  setup.tokens = tokens;
  setup.prices = std::move(prices);
  setup.top = top;
  setup.jobs = jobs;
  setup.threads = threads;
  setup.attention = attention;
  setup.context_parallel = context_parallel;
  setup.space = space;
  setup.ampere_framework = ampere_framework;
  setup.hopper_framework = hopper_framework;
  setup.json = json;
  setup.shard = shard;
  setup.points = std::move(points);
  setup.selected = std::move(selected);
  return setup;
}

// The work of this shard's points (a search each), counted before the first one runs.
void check_sweep_work(const SweepSetup& s, const ParsedArgs& parsed)
{
  WorkEstimate total;
  for (const size_t i : s.selected) {
    const PointSpec& p = s.points[i];
    const GptConfig& model = s.models[p.model];
    const topo::ClusterSpec& node = s.nodes[p.cluster];
    sim::SearchSpace space = s.space;
    space.attention = s.attention.value_or(default_attention_kernel(node.gpu.generation));
    space.context_parallel = s.context_parallel.value_or(sim::default_context_parallel(model, space.attention));
    total += estimate_search_work(model, p.gpus, s.global_batch.value_or(p.gpus),
                                  std::min<int64_t>(p.gpus, node.domain_gpus()), space, s.top);
  }
  check_work(total, max_work(parsed), "the sweep");
}

// One process per point, `jobs` at once: the search at that point, the best plan's bytes or the reason it is
// skipped sent back.
std::string run_sweep_point(const ParsedArgs& parsed, const SweepSetup& s, size_t k)
{
  const PointSpec& p = s.points[s.selected[k]];
  const GptConfig& model = s.models[p.model];
  const std::string& cluster_name = s.cluster_names[p.cluster];
  const int64_t node_gpus = s.nodes[p.cluster].gpus_per_node;
  const topo::ClusterSpec cluster =
      topo::load_cluster(cluster_name, static_cast<int>(std::max<int64_t>(1, p.gpus / node_gpus)), s.sets);
  const int64_t batch = s.global_batch.value_or(p.gpus);
  sim::SearchSpace point_space = s.space;
  point_space.attention = s.attention.value_or(default_attention_kernel(cluster.gpu.generation));
  point_space.context_parallel =
      s.context_parallel.value_or(sim::default_context_parallel(model, point_space.attention));
  // TP up to the NVLink domain (the node, or a rack of trays on an NVL72), as search: its collectives stay on NVLink.
  const sim::PlanEnumeration plans = sim::enumerate_plans(
      model, p.gpus, batch, std::min<int64_t>(p.gpus, cluster.domain_gpus()), cluster.gpu.hbm_bytes, point_space);
  if (plans.shapes == 0)
    return "Sno parallel plan splits it (tp must divide the heads " + std::to_string(model.heads) +
           ", pp the layers " + std::to_string(model.layers) + ", dp the global batch)";
  if (plans.fitting.empty())
    return "Sno plan fits: the smallest, " + describe_plan(plans.smallest.plan) + ", needs " +
           gib(plans.smallest.peak_memory_bytes) + " GiB per GPU but the " + cluster.gpu.kind + " has " +
           gib(cluster.gpu.hbm_bytes) + " GiB";
  const GpuComputeModel gpu = compute_model_for_gpu(parsed, cluster.gpu);
  const topo::ClusterGraph graph(cluster);
  const FrameworkProfile& framework =
      is_hopper_or_later(cluster.gpu.generation) ? s.hopper_framework : s.ampere_framework;
  const std::vector<SimulatedCandidate> ranked = rank_and_simulate(
      cluster, graph, model, plans.fitting, gpu, framework, s.threads, static_cast<size_t>(s.top), "sweep", false);
  return "R" + simulated_candidate_json(s.models[p.model], ranked.front());
}

// The rows of the points that ran (in point order) from what their processes answered; the skipped points'
// reasons on stderr. InputError when no point of a whole sweep has a plan that fits.
std::vector<SweepRow> collect_rows(const SweepSetup& s, const std::vector<std::string>& outcomes)
{
  std::vector<SweepRow> rows;
  std::vector<std::string> skipped; // warnings, in point order
  for (size_t k = 0; k < s.selected.size(); ++k) {
    const PointSpec& p = s.points[s.selected[k]];
    if (outcomes[k].rfind("S", 0) == 0) {
      skipped.push_back(s.describe(s.selected[k]) + ": " + outcomes[k].substr(1));
      continue;
    }
    if (outcomes[k].rfind("R", 0) != 0)
      throw std::runtime_error("the process of the point " + s.describe(s.selected[k]) + " sent a malformed answer");
    const std::optional<SimulatedCandidate> best = parse_simulated_candidate_json(outcomes[k].substr(1));
    SweepRow row;
    row.point = s.selected[k];
    row.model = s.models[p.model].name;
    row.cluster = s.cluster_names[p.cluster];
    row.gpus = p.gpus;
    row.plan = best->estimate.candidate.plan;
    row.options = best->estimate.candidate.options;
    row.peak_memory_bytes = best->estimate.candidate.peak_memory_bytes;
    row.iteration_time_s = best->report.iteration_time_s;
    row.tokens_per_s = best->report.tokens_per_s;
    row.mfu = best->report.mfu_bf16;
    if (s.have_tokens) {
      row.time_to_train_s = s.tokens / row.tokens_per_s;
      row.gpu_hours = static_cast<double>(p.gpus) * row.time_to_train_s / 3600;
    }
    if (s.have_price)
      row.cost = row.gpu_hours * s.prices[p.cluster];
    rows.push_back(row);
  }
  if (rows.empty() && !s.shard.sliced()) {
    if (skipped.size() == 1)
      throw InputError(skipped.front());
    throw InputError("no plan fits at any of the " + std::to_string(skipped.size()) +
                     " points of the sweep; at the last, " + skipped.back());
  }
  for (const std::string& reason : skipped)
    std::cerr << "gputwin sweep: skipping " << reason << "\n";
  if (s.shard.sliced()) {
    if (s.selected.empty())
      std::cerr << "gputwin sweep: shard " << to_string(s.shard) << " has no points (the sweep has " << s.points.size()
                << "); its CSV has the header only\n";
    else if (rows.empty())
      std::cerr << "gputwin sweep: shard " << to_string(s.shard)
                << ": no point has a plan that fits; its CSV has the "
                   "header only\n";
  } else {
    compute_scaling_efficiency(rows);
  }

  return rows;
}

} // namespace

int run_sweep(const std::vector<std::string>& arguments, std::ostream& out)
{
  ArgParser parser(
      "gputwin sweep",
      "Sweeps models, clusters and GPU counts: at every (model, cluster, GPUs) point runs the search of\n"
      "`gputwin search` (every plan that fits, ranked by the fast estimator, the best K simulated in full) and\n"
      "keeps the fastest simulated plan; prints one row per point with time to train (--tokens), GPU-hours, cost\n"
      "(--price-per-gpu-hour) and scaling efficiency against the smallest point of the same model and cluster.\n"
      "Points where no plan fits are skipped with a warning. Points run in parallel processes (--jobs), in\n"
      "slices on several machines (--shard K/N, or a Slurm job array: scripts/sweep.sbatch) joined by --merge.\n"
      "A progress bar is drawn on stderr when it is a terminal (not with --json).\n\n"
      "example: gputwin sweep --model gpt3-175b --cluster dgx-a100,dgx-h100 --gpus 64:1024:x2 --global-batch 1536\n"
      "         --tokens 300e9 --price-per-gpu-hour 2 --csv sweep.csv --plot sweep.png\n"
      "         gputwin sweep ... --shard 2/3 --csv part2.csv        (likewise 1/3 and 3/3, anywhere)\n"
      "         gputwin sweep --merge part1.csv part2.csv part3.csv -o sweep.csv");
  parser.allow_positional("[--merge CSV...]", 1000000);
  add_model_flags(parser, true);
  parser.add_section("sweep");
  parser.add_option("--cluster", "NAME|FILE[,...]", "clusters, comma-separated (default dgx-a100)");
  parser.add_option("--set", "KEY=VALUE", "override a field of every cluster, as in gputwin topo (repeatable)", true);
  parser.add_option("--gpus", "LIST|RANGE",
                    "GPU counts: 64,128,256 or START:END:xFACTOR (64:1024:x2) or START:END:+STEP");
  parser.add_option("--global-batch", "B", "samples per iteration at every point (default: the point's GPUs)");
  parser.add_option("--tokens", "T", "tokens to train on (300e9): time to train, GPU-hours");
  parser.add_option("--price-per-gpu-hour", "P|NAME=P[,...]",
                    "price of one GPU-hour: cost = GPU-hours x P; one P for every cluster, or one per cluster of "
                    "--cluster (dgx-h100=2.5,gb200-nvl72=6)");
  parser.add_option("--attention", "KERNEL",
                    "attention kernel of every plan: unfused|flash (default: flash on Hopper, unfused on Ampere)");
  parser.add_option("--cp", "LIST",
                    "context-parallel sizes to try, e.g. 1,2,4,8 (needs flash attention; default 1,2,4,8 with flash "
                    "attention and --seq-len >= 8192, else 1)");
  parser.add_switch("--fp8", "every plan with FP8 linear-layer GEMMs (Transformer Engine; every cluster H100/H200)");
  add_precision_flag(parser);
  parser.add_switch("--no-overlaps", "plans without Megatron-Core's overlaps (default: each plan estimated with every "
                                     "overlap that applies and with none, the faster kept)");
  parser.add_option("--top", "K", "plans per point confirmed by the full simulation (default 1)");
  add_max_work_flag(parser);
  add_gpu_model_flags(parser);
  add_framework_flag(parser);
  parser.add_section("scale-out");
  parser.add_option("--jobs", "N", "points at once, one process each (default: one per core, at most the points)");
  parser.add_option("--shard", "K/N", "only the K-th of N slices of the points, K from 1 (default: a Slurm array's)");
  parser.add_switch("--merge", "join the CSV files given (a sweep's shards) as one run writes them");
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable list of the points");
  parser.add_option("--csv", "FILE", "also write the points as CSV");
  parser.add_option("--output", "FILE", "the same as --csv (-o FILE); with --merge, without it the CSV goes to stdout");
  parser.add_option("--plot", "FILE",
                    "also plot tokens/s, MFU, time to train and cost vs GPUs (.png or .svg; gnuplot)");
  const ParsedArgs parsed = parser.parse(with_long_output_flag(arguments));
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  if (parsed.has("--merge"))
    return run_merge(parsed, out);
  if (!parsed.positional().empty())
    throw InputError("unexpected argument '" + parsed.positional().front() +
                     "' for 'gputwin sweep' (CSV files are read with --merge; see gputwin sweep --help)");

  const SweepSetup setup = read_sweep_setup(parsed);
  check_sweep_work(setup, parsed);
  const bool json = setup.json;
  ProgressBar progress("sweep points", !json);
  size_t done = 0;
  progress.update(0, setup.selected.size());
  const std::vector<std::string> outcomes = sim::run_isolated(
      setup.selected.size(), static_cast<int>(setup.jobs), [&](size_t k) { return run_sweep_point(parsed, setup, k); },
      sim::IsolatedRunCallbacks{[&](size_t, const std::string&) { progress.update(++done, setup.selected.size()); },
                         [&] { progress.tick(); }, [&](size_t k) { return "the point " + setup.describe(setup.selected[k]); }});
  progress.finish();

  const std::vector<SweepRow> rows = collect_rows(setup, outcomes);
  render_outputs(parsed, sweep_identity(sweep_flags(parsed), setup.points.size(), setup.shard), rows);
  if (json)
    write_json(out, rows);
  else
    write_table(out, rows);
  return 0;
}

} // namespace gputwin::cli
