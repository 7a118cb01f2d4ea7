// `gputwin sweep`: the best plan of every (model, cluster, GPU count) point -- the search of `gputwin search` at
// each point, the fastest simulated plan kept -- with time to train, GPU-hours and cost, as a table, JSON or CSV,
// and plotted by gnuplot; `--shard K/N` (or a Slurm job array) runs a slice of the points and `--merge` joins the
// slices' CSVs into the file one run writes. This file reads the flags into a sim::SweepRequest and writes the
// outputs; sim/study runs the points (sweep.hpp), writes them (sweep_output.hpp, sweep_csv.hpp, sweep_plot.hpp)
// and merges the slices (sweep_merge.hpp).
#include "commands.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/output_file.hpp"
#include "gputwin/common/text.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/simulated_search.hpp"
#include "gputwin/sim/sweep.hpp"
#include "gputwin/sim/sweep_merge.hpp"
#include "gputwin/sim/sweep_output.hpp"
#include "gputwin/sim/sweep_plot.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

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

// --tokens: a positive number (decimal only: no "0x10", "inf", "nan").
double read_tokens(const ParsedArgs& parsed)
{
  const std::string text = *parsed.value("--tokens");
  double v = -1;
  try {
    v = parse_number("--tokens", text);
  } catch (const InputError&) {
    v = -1;
  }
  if (v <= 0)
    throw InputError("--tokens: expected a positive number, got '" + text + "'");
  return v;
}

// The price of one GPU-hour of each cluster of the sweep from --price-per-gpu-hour: one number for every cluster,
// or NAME=P for each cluster (NAME as given to --cluster, or the cluster file's name). InputError naming the flag
// for a cluster without a price, a price for a cluster not in the sweep, a cluster priced twice, or a price that
// is not a non-negative number.
void read_prices(const std::string& text, std::vector<sim::SweepCluster>& clusters)
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
  if (text.find('=') == std::string::npos) {
    const double all = price(text);
    for (sim::SweepCluster& c : clusters)
      c.price_per_gpu_hour = all;
    return;
  }
  for (const std::string& item : split_list(flag, text)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(flag + ": expected NAME=P for each cluster (dgx-h100=2.5,gb200-nvl72=6), got '" + item + "'");
    const std::string name = item.substr(0, eq);
    bool in_sweep = false;
    for (sim::SweepCluster& c : clusters) {
      if (c.name != name && c.node.name != name)
        continue;
      if (!std::isnan(c.price_per_gpu_hour))
        throw InputError(flag + ": two prices for " + c.name);
      c.price_per_gpu_hour = price(item.substr(eq + 1));
      in_sweep = true;
    }
    if (!in_sweep) {
      std::string sweep;
      for (const sim::SweepCluster& c : clusters)
        sweep += (sweep.empty() ? "" : ",") + c.name;
      throw InputError(flag + ": a price for " + name + ", which is not a cluster of --cluster (" + sweep + ")");
    }
  }
  for (const sim::SweepCluster& c : clusters)
    if (std::isnan(c.price_per_gpu_hour))
      throw InputError(flag + ": no price for " + c.name + " (expected NAME=P for each cluster of --cluster, "
                       "or one price for all)");
}

// The flags that decide a sweep's points and rows, in a fixed order (the identity of its CSVs, sweep_shard.hpp):
// not the ones that only say how it runs or where it writes (--jobs, --shard, --csv, --plot, --json, --max-work).
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

// The CSV (--csv or --output) and the plot (--plot) of `rows`.
void write_outputs(const ParsedArgs& parsed, const sim::SweepIdentity& identity, const std::vector<sim::SweepRow>& rows)
{
  if (const auto file = csv_output(parsed))
    write_file_atomically(
        *file, [&](std::ostream& csv) { sim::write_sweep_csv(csv, identity, rows); },
        parsed.has("--csv") ? "--csv" : "--output");
  if (const auto plot = parsed.value("--plot"); plot && !rows.empty())
    sim::write_sweep_plot(*plot, rows);
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
  const sim::MergedSweep merged = sim::merge_sweep_csvs(files);
  write_outputs(parsed, merged.identity, merged.rows);
  if (csv_output(parsed))
    sim::print_sweep_table(out, merged.rows);
  else
    sim::write_sweep_csv(out, merged.identity, merged.rows);
  return 0;
}

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

// A sweep read from its flags: every input checked before the first point runs, the points this shard runs, and
// how many run at once.
struct SweepSetup {
  sim::SweepRequest request;
  sim::SweepPoints points;
  int jobs = 1; // points at once, one process each
};

// The clusters of --cluster (one node each, its GPU model and precision checked against the GPU counts and flags).
std::vector<sim::SweepCluster> sweep_clusters(const ParsedArgs& parsed, const sim::SweepRequest& request)
{
  std::vector<sim::SweepCluster> clusters;
  for (const std::string& name : split_list("--cluster", parsed.value("--cluster").value_or(topo::default_cluster))) {
    sim::SweepCluster c;
    c.name = name;
    c.node = topo::load_cluster(name, 1, request.set_overrides);
    for (const int64_t gpus : request.gpu_counts)
      sim::check_whole_nodes(gpus, c.node);
    c.gpu = compute_model_for_gpu(parsed, c.node.gpu);
    ParallelPlan precision_plan;
    precision_plan.precision = read_precision(parsed);
    check_precision_supported(precision_plan, c.node);
    clusters.push_back(c);
  }
  return clusters;
}

// --attention (else each cluster's default, stated on stderr where it is flash) and --cp (else each point's
// default, sim::default_context_parallel).
void read_attention(const ParsedArgs& parsed, sim::SweepRequest& r)
{
  std::optional<AttentionKernel> attention;
  if (const auto kernel = parsed.value("--attention")) {
    attention = parse_attention(*kernel);
    if (!attention)
      throw InputError("--attention: expected unfused|flash, got '" + *kernel + "'");
  }
  if (const auto list = parsed.value("--cp")) {
    r.context_parallel.emplace();
    for (const std::string& item : split_list("--cp", *list)) {
      int64_t cp = 0;
      if (!parse_count(item, cp))
        throw InputError("--cp: expected a comma-separated list of positive integers, got '" + *list + "'");
      r.context_parallel->push_back(cp);
    }
  }
  for (sim::SweepCluster& c : r.clusters) {
    c.attention = attention.value_or(default_attention_kernel(c.node.gpu.generation));
    if (r.context_parallel && *r.context_parallel != std::vector<int64_t>{1} && c.attention != AttentionKernel::Flash)
      throw InputError("--cp: context parallelism needs flash attention, and the plans on " + c.node.name +
                       " use unfused (expected --attention flash)");
    if (!attention && c.attention == AttentionKernel::Flash)
      std::cerr << "gputwin sweep: note: --attention flash on " << c.node.name << ": the default on "
                << to_string(c.node.gpu.generation) << " GPUs (Transformer Engine's fused attention; --attention "
                << "unfused for Megatron 2022's kernels)\n";
  }
}

SweepSetup read_sweep_setup(const ParsedArgs& parsed)
{
  SweepSetup setup;
  sim::SweepRequest& r = setup.request;
  r.models = sweep_models(parsed);
  if (!parsed.has("--gpus"))
    throw InputError("--gpus: required (GPU counts: 64,128,256 or 64:1024:x2)");
  r.gpu_counts = parse_gpu_counts(*parsed.value("--gpus"));
  r.set_overrides = parsed.values("--set");
  r.clusters = sweep_clusters(parsed, r);
  if (parsed.has("--global-batch")) {
    r.global_batch = parsed.integer("--global-batch");
    if (!r.global_batch || *r.global_batch < 1)
      throw InputError("--global-batch: expected a positive integer, got " + *parsed.value("--global-batch"));
  }
  if (parsed.has("--tokens"))
    r.tokens = read_tokens(parsed);
  if (parsed.has("--price-per-gpu-hour")) {
    read_prices(*parsed.value("--price-per-gpu-hour"), r.clusters);
    if (!parsed.has("--tokens"))
      throw InputError("--price-per-gpu-hour: needs --tokens (the cost is of training on T tokens)");
  }
  r.top = parsed.integer("--top").value_or(1);
  if (r.top < 1)
    throw InputError("--top: expected a positive integer, got " + *parsed.value("--top"));
  const std::optional<int64_t> jobs_given = checked_jobs(parsed);
  read_attention(parsed, r);
  r.space.precision = read_precision(parsed);
  r.space.fp8_recipe = read_fp8_recipe(parsed, r.space.precision);
  r.space.overlaps = !parsed.has("--no-overlaps");
  check_plot(parsed.value("--plot"));
  csv_output(parsed);
  check_output_flags(parsed, {"--csv", "--output", "--plot"}); // before any point runs
  // Without --framework each cluster gets the framework of its GPU generation (default_framework_for).
  const FrameworkProfile ampere = framework_from_flags(parsed, default_framework_for(GpuGeneration::Ampere));
  const FrameworkProfile hopper = framework_from_flags(parsed, default_framework_for(GpuGeneration::Hopper));
  for (sim::SweepCluster& c : r.clusters)
    c.framework = is_hopper_or_later(c.node.gpu.generation) ? hopper : ampere;
  r.shard = parsed.has("--shard")
                ? sim::parse_shard(*parsed.value("--shard"))
                : sim::shard_from_slurm([](const char* name) { return std::getenv(name); }).value_or(sim::Shard{});
  setup.points = sim::sweep_points(r);
  const auto [jobs, threads] = points_at_once(jobs_given, setup.points.selected.size());
  setup.jobs = static_cast<int>(jobs);
  r.threads_per_point = threads;
  return setup;
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
  add_search_space_flags(parser, false);
  parser.add_option("--top", "K", "plans per point confirmed by the full simulation (default 1)");
  sim::add_max_work_flag(parser);
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
  sim::check_work(sim::sweep_work(setup.request, setup.points), sim::max_work(parsed), "the sweep");
  const bool json = parsed.has("--json");
  const sim::SweepResult result = sim::run_sweep_points(setup.request, setup.points, setup.jobs, !json);
  for (const std::string& reason : result.skipped)
    std::cerr << "gputwin sweep: skipping " << reason << "\n";
  const sim::Shard& shard = setup.request.shard;
  if (shard.sliced() && setup.points.selected.empty())
    std::cerr << "gputwin sweep: shard " << to_string(shard) << " has no points (the sweep has "
              << setup.points.all.size() << "); its CSV has the header only\n";
  else if (shard.sliced() && result.rows.empty())
    std::cerr << "gputwin sweep: shard " << to_string(shard)
              << ": no point has a plan that fits; its CSV has the header only\n";
  write_outputs(parsed, sim::sweep_identity(sweep_flags(parsed), setup.points.all.size(), shard), result.rows);
  if (json)
    sim::write_sweep_json(out, result.rows);
  else
    sim::print_sweep_table(out, result.rows);
  return 0;
}

} // namespace gputwin::cli
