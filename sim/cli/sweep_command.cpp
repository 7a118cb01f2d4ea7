// `gputwin sweep`: the best plan of every (model, cluster, GPU count) point — the search of `gputwin search`
// (search_core.hpp) at each point, the fastest simulated plan kept — with time to train, GPU-hours and cost,
// as a table, JSON or CSV, and plotted by gnuplot.
#include "commands.hpp"
#include "search_core.hpp"

#include "gputwin/models/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/json_writer.hpp"
#include "gputwin/traces/output_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

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
  char* rest = nullptr;
  const long long v = std::strtoll(text.c_str(), &rest, 10);
  if (text.empty() || *rest != '\0' || v < 1 || v > max_gpus)
    return false;
  value = v;
  return true;
}

// "64,128,256" or "START:END:xFACTOR" / "START:END:+STEP" (64:1024:x2), ascending, without duplicates.
std::vector<int64_t> parse_gpu_counts(const std::string& text)
{
  const std::string expected = "--gpus: expected positive GPU counts as a list (64,128,256) or a range "
                               "START:END:xFACTOR or START:END:+STEP (64:1024:x2), got '" + text + "'";
  std::vector<int64_t> counts;
  if (text.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    for (std::string part; std::getline(stream, part, ':');)
      parts.push_back(part);
    int64_t start = 0, end = 0, step = 0;
    if (parts.size() != 3 || !parse_count(parts[0], start) || !parse_count(parts[1], end) || end < start ||
        parts[2].size() < 2 || (parts[2][0] != 'x' && parts[2][0] != '+') || !parse_count(parts[2].substr(1), step) ||
        (parts[2][0] == 'x' && step < 2))
      throw InputError(expected);
    for (int64_t n = start; n <= end; n = parts[2][0] == 'x' ? n * step : n + step)
      counts.push_back(n);
  } else {
    for (const std::string& item : split_list("--gpus", text)) {
      int64_t n = 0;
      if (!parse_count(item, n))
        throw InputError(expected);
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
  char* rest = nullptr;
  const double v = std::strtod(text.c_str(), &rest);
  if (text.empty() || *rest != '\0' || !std::isfinite(v) || v < 0 || (!allow_zero && v == 0))
    throw InputError(flag + ": expected a " + (allow_zero ? "non-negative" : "positive") + " number, got '" + text + "'");
  return v;
}

struct Row {
  std::string model, cluster;
  int64_t gpus = 0;
  SimulatedCandidate best;
  double time_to_train_s = NAN, gpu_hours = NAN, cost = NAN, scaling_efficiency = 1;
};

// A number for CSV: `format` of `v`, or empty when not known (no --tokens, no --price-per-gpu-hour).
std::string csv_number(const char* format, double v)
{
  if (!std::isfinite(v))
    return "";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

void write_csv(std::ostream& out, const std::vector<Row>& rows)
{
  out << "cluster,gpus,tp,pp,dp,micro_batch,iteration_time_s,tokens_per_s,mfu,time_to_train_s,gpu_hours,cost,"
         "model,schedule,chunks,recompute,peak_memory_bytes,scaling_efficiency\n";
  for (const Row& r : rows) {
    const ParallelPlan& p = r.best.estimate.candidate.plan;
    out << r.cluster << ',' << r.gpus << ',' << p.tp << ',' << p.pp << ',' << p.dp << ',' << p.micro_batch << ','
        << csv_number("%.17g", r.best.iteration_time_s) << ',' << csv_number("%.17g", r.best.tokens_per_s) << ','
        << csv_number("%.6g", r.best.mfu) << ',' << csv_number("%.17g", r.time_to_train_s) << ','
        << csv_number("%.17g", r.gpu_hours) << ',' << csv_number("%.17g", r.cost) << ',' << r.model << ','
        << to_string(p.schedule) << ',' << p.chunks << ',' << to_string(p.recompute) << ','
        << r.best.estimate.candidate.peak_memory_bytes << ',' << csv_number("%.6g", r.scaling_efficiency) << '\n';
  }
}

std::string gnuplot_quoted(std::string text)
{
  for (char& c : text)
    if (c == '"' || c == '\\' || c == '\n')
      c = '_';
  return '"' + text + '"';
}

// Throughput, MFU, time to train (else iteration time) and cost (else GPU-hours, else GPU count x iteration
// time) against GPU count, one line per (cluster, model), drawn by gnuplot into a temporary directory and then
// written to `path` atomically.
void render_plot(const std::string& path, const std::vector<Row>& rows, bool have_tokens, bool have_price)
{
  const bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
  std::string dir_template = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : "/tmp") + "/gputwin-plot.XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr)
    throw OutputError("--plot: cannot create a temporary directory for gnuplot");
  const std::string dir = dir_template;
  const std::string data = dir + "/sweep.dat", script = dir + "/sweep.gp", image = dir + (svg ? "/plot.svg" : "/plot.png"),
                    log = dir + "/gnuplot.log";
  struct Cleanup {
    std::vector<std::string> files;
    std::string dir;
    ~Cleanup()
    {
      for (const std::string& f : files)
        std::remove(f.c_str());
      rmdir(dir.c_str());
    }
  } cleanup{{data, script, image, log}, dir};

  std::vector<std::pair<std::string, std::string>> series; // (cluster, model) in first-seen order
  {
    std::ofstream d(data);
    for (const Row& r : rows) {
      const std::pair<std::string, std::string> key{r.cluster, r.model};
      if (std::find(series.begin(), series.end(), key) != series.end())
        continue;
      if (!series.empty())
        d << "\n\n";
      series.push_back(key);
      for (const Row& s : rows)
        if (s.cluster == r.cluster && s.model == r.model) {
          const double train = have_tokens ? s.time_to_train_s / 86400 : s.best.iteration_time_s;
          const double money = have_price ? s.cost : have_tokens ? s.gpu_hours : static_cast<double>(s.gpus) * s.best.iteration_time_s;
          char line[256];
          std::snprintf(line, sizeof line, "%lld %.9g %.9g %.9g %.9g\n", static_cast<long long>(s.gpus),
                        s.best.tokens_per_s, 100 * s.best.mfu, train, money);
          d << line;
        }
    }
    if (!d.flush())
      throw OutputError("--plot: cannot write gnuplot's data in " + dir);
  }
  const std::string panels[4][2] = {
      {"Throughput", "tokens/s"},
      {"Model FLOPs utilization", "MFU (%)"},
      {have_tokens ? "Time to train" : "Iteration time", have_tokens ? "time to train (days)" : "iteration time (s)"},
      {have_price ? "Cost" : have_tokens ? "GPU-hours" : "GPU-seconds per iteration",
       have_price ? "cost (GPU-hours x price per GPU-hour)" : have_tokens ? "GPU-hours" : "GPU-seconds"}};
  {
    std::ofstream s(script);
    s << (svg ? "set terminal svg size 1400,1000 dynamic font 'Sans,12'\n"
              : "set terminal pngcairo size 1400,1000 font 'Sans,11'\n");
    s << "set termoption noenhanced\nset output '" << image << "'\n";
    s << "set multiplot layout 2,2 title \"gputwin sweep: best plan per point\"\n";
    s << "set logscale x 2\nset format x '%g'\nset xlabel 'GPUs'\nset grid\nset key top left\n";
    for (int panel = 0; panel < 4; ++panel) {
      s << "set title " << gnuplot_quoted(panels[panel][0]) << "\nset ylabel " << gnuplot_quoted(panels[panel][1])
        << "\n";
      s << (panel >= 2 ? "set logscale y\n" : "unset logscale y\n");
      s << "plot ";
      for (size_t i = 0; i < series.size(); ++i)
        s << (i ? ", \\\n     " : "") << "'" << data << "' index " << i << " using 1:" << panel + 2
          << " with linespoints lw 2 pt 7 title " << gnuplot_quoted(series[i].first + " " + series[i].second);
      s << "\n";
    }
    s << "unset multiplot\n";
    if (!s.flush())
      throw OutputError("--plot: cannot write gnuplot's script in " + dir);
  }
  const std::string command = "gnuplot '" + script + "' >'" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  if (status != 0) {
    std::ifstream l(log);
    std::string first, line;
    while (std::getline(l, line))
      if (!line.empty() && line.find_first_not_of(" ^") != std::string::npos) {
        first = line;
        break;
      }
    throw OutputError("--plot: gnuplot failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")" +
                      (first.empty() ? "" : ": " + first));
  }
  std::ifstream in(image, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  if (!in || content.str().empty())
    throw OutputError("--plot: gnuplot wrote no image");
  write_file_atomically(path, content.str(), "--plot");
}

} // namespace

int run_sweep(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser(
      "gputwin sweep",
      "Sweeps models, clusters and GPU counts: at every (model, cluster, GPUs) point runs the search of\n"
      "`gputwin search` (every plan that fits, ranked by the fast estimator, the best K simulated in full) and\n"
      "keeps the fastest simulated plan; prints one row per point with time to train (--tokens), GPU-hours, cost\n"
      "(--price-per-gpu-hour) and scaling efficiency against the smallest point of the same model and cluster.\n"
      "Points where no plan fits are skipped with a warning.\n\n"
      "example: gputwin sweep --model gpt3-175b --cluster dgx-a100,dgx-h100 --gpus 64:1024:x2 --global-batch 1536\n"
      "         --tokens 300e9 --price-per-gpu-hour 2 --csv sweep.csv --plot sweep.png");
  parser.add_section("model");
  parser.add_option("--model", "NAME|FILE[,...]", "built-in models or model .yaml files, comma-separated");
  parser.add_option("--hidden", "H", "hidden size h (overrides every model's)");
  parser.add_option("--heads", "A", "attention heads a");
  parser.add_option("--layers", "L", "transformer layers L");
  parser.add_option("--seq-len", "S", "sequence length s, tokens");
  parser.add_option("--vocab", "V", "vocabulary size v");
  parser.add_section("sweep");
  parser.add_option("--cluster", "NAME|FILE[,...]", "clusters, comma-separated (default dgx-a100)");
  parser.add_option("--set", "KEY=VALUE", "override a field of every cluster, as in gputwin topo (repeatable)", true);
  parser.add_option("--gpus", "LIST|RANGE", "GPU counts: 64,128,256 or START:END:xFACTOR (64:1024:x2) or START:END:+STEP");
  parser.add_option("--global-batch", "B", "samples per iteration at every point (default: the point's GPUs)");
  parser.add_option("--tokens", "T", "tokens to train on (300e9): time to train, GPU-hours");
  parser.add_option("--price-per-gpu-hour", "P", "price of one GPU-hour: cost = GPU-hours x P");
  parser.add_option("--attention", "KERNEL", "attention kernel of every plan: unfused|flash (default unfused)");
  parser.add_option("--top", "K", "plans per point confirmed by the full simulation (default 1)");
  parser.add_option("--gpu-model", "FILE", "GPU compute model fitted by gputwin calibrate (default: built-in)");
  add_framework_flag(parser);
  parser.add_option("--jobs", "N", "threads for the estimates (default: the machine's cores)");
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable list of the points");
  parser.add_option("--csv", "FILE", "also write the points as CSV");
  parser.add_option("--plot", "FILE", "also plot tokens/s, MFU, time to train and cost vs GPUs (.png or .svg; gnuplot)");
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }

  // Every input checked before the first point runs.
  std::vector<GptConfig> models;
  for (const std::string& name : split_list("--model", parsed.value("--model").value_or("gpt3-175b"))) {
    std::vector<std::string> model_args = {"--model", name};
    for (const char* flag : {"--hidden", "--heads", "--layers", "--seq-len", "--vocab"})
      if (const auto v = parsed.value(flag)) {
        model_args.push_back(flag);
        model_args.push_back(*v);
      }
    ArgParser model_parser("gputwin sweep", "");
    add_model_flags(model_parser);
    models.push_back(model_from_flags(model_parser.parse(model_args)));
  }
  if (!parsed.has("--gpus"))
    throw InputError("--gpus: required (GPU counts: 64,128,256 or 64:1024:x2)");
  const std::vector<int64_t> gpu_counts = parse_gpu_counts(*parsed.value("--gpus"));
  const std::vector<std::string> cluster_names =
      split_list("--cluster", parsed.value("--cluster").value_or(topo::default_cluster));
  const std::vector<std::string> sets = parsed.values("--set");
  for (const std::string& name : cluster_names) {
    const topo::ClusterSpec node = topo::load_cluster(name, 1, sets);
    for (const int64_t gpus : gpu_counts)
      if (gpus > node.gpus_per_node && gpus % node.gpus_per_node != 0)
        throw InputError("--gpus: " + std::to_string(gpus) + " is not a multiple of " + node.name + "'s " +
                         std::to_string(node.gpus_per_node) + " GPUs per node (expected whole nodes)");
  }
  std::optional<int64_t> global_batch;
  if (parsed.has("--global-batch")) {
    global_batch = parsed.integer("--global-batch");
    if (!global_batch || *global_batch < 1)
      throw InputError("--global-batch: expected a positive integer, got " + *parsed.value("--global-batch"));
  }
  const bool have_tokens = parsed.has("--tokens"), have_price = parsed.has("--price-per-gpu-hour");
  const double tokens = have_tokens ? positive_number(parsed, "--tokens", false) : NAN;
  const double price = have_price ? positive_number(parsed, "--price-per-gpu-hour", true) : NAN;
  if (have_price && !have_tokens)
    throw InputError("--price-per-gpu-hour: needs --tokens (the cost is of training on T tokens)");
  const int64_t top = parsed.integer("--top").value_or(1);
  if (top < 1)
    throw InputError("--top: expected a positive integer, got " + *parsed.value("--top"));
  const int jobs = static_cast<int>(
      parsed.integer("--jobs").value_or(std::max<unsigned>(1, std::thread::hardware_concurrency())));
  if (jobs < 1 || jobs > 1024)
    throw InputError("--jobs: expected an integer in [1, 1024], got " + *parsed.value("--jobs"));
  sim::SearchSpace space;
  if (const auto kernel = parsed.value("--attention")) {
    const auto parsed_kernel = parse_attention(*kernel);
    if (!parsed_kernel)
      throw InputError("--attention: expected unfused|flash, got '" + *kernel + "'");
    space.attention = *parsed_kernel;
  }
  const std::optional<std::string> plot = parsed.value("--plot");
  if (plot) {
    const auto ends_with = [&](const char* suffix) {
      const std::string s = suffix;
      return plot->size() > s.size() && plot->compare(plot->size() - s.size(), s.size(), s) == 0;
    };
    if (!ends_with(".png") && !ends_with(".svg"))
      throw InputError("--plot: expected a file ending in .png or .svg, got '" + *plot + "'");
    if (std::system("gnuplot --version >/dev/null 2>&1") != 0)
      throw InputError("--plot: gnuplot not found (install the Debian package gnuplot-nox: apt-get install gnuplot-nox)");
  }
  const FrameworkProfile framework = framework_from_flags(parsed, default_framework);
  const bool json = parsed.has("--json");

  std::vector<Row> rows;
  const size_t total = models.size() * cluster_names.size() * gpu_counts.size();
  size_t done = 0;
  Progress progress("sweep points", !json);
  for (const GptConfig& model : models)
    for (const std::string& cluster_name : cluster_names)
      for (const int64_t gpus : gpu_counts) {
        const topo::ClusterSpec node = topo::load_cluster(cluster_name, 1, sets);
        const int64_t nodes = std::max<int64_t>(1, gpus / node.gpus_per_node);
        const topo::ClusterSpec cluster = topo::load_cluster(cluster_name, static_cast<int>(nodes), sets);
        const int64_t batch = global_batch.value_or(gpus);
        const std::string point = model.name + " on " + std::to_string(gpus) + " GPUs of " + cluster.name +
                                  ", global batch " + std::to_string(batch);
        const sim::PlanEnumeration plans = sim::enumerate_plans(
            model, gpus, batch, std::min<int64_t>(gpus, cluster.gpus_per_node), cluster.gpu.hbm_bytes, space);
        if (plans.shapes == 0) {
          std::cerr << "gputwin sweep: skipping " << point << ": no parallel plan splits it (tp must divide the heads "
                    << model.heads << ", pp the layers " << model.layers << ", dp the global batch)\n";
        } else if (plans.fitting.empty()) {
          std::cerr << "gputwin sweep: skipping " << point << ": no plan fits (the smallest, "
                    << describe_plan(plans.smallest.plan) << ", needs " << gib(plans.smallest.peak_memory_bytes)
                    << " GiB per GPU, the " << cluster.gpu.kind << " has " << gib(cluster.gpu.hbm_bytes) << " GiB)\n";
        } else {
          const GpuComputeModel gpu = compute_model_for_gpu(parsed, cluster.gpu.kind, cluster.gpu.peak_bf16_flops,
                                                            cluster.gpu.hbm_bytes_per_s);
          const topo::ClusterGraph graph(cluster);
          const std::vector<SimulatedCandidate> ranked = rank_and_simulate(
              cluster, graph, model, plans.fitting, gpu, framework, jobs, static_cast<size_t>(top), "sweep", false);
          Row row{model.name, cluster_name, gpus, ranked.front()};
          if (have_tokens) {
            row.time_to_train_s = tokens / row.best.tokens_per_s;
            row.gpu_hours = static_cast<double>(gpus) * row.time_to_train_s / 3600;
          }
          if (have_price)
            row.cost = row.gpu_hours * price;
          rows.push_back(row);
        }
        progress.update(++done, total);
      }
  if (rows.empty())
    throw InputError("no plan fits at any point of the sweep (each point's reason is above)");
  // Scaling efficiency: tokens/s per GPU against the smallest point of the same model and cluster.
  std::map<std::pair<std::string, std::string>, const Row*> smallest;
  for (const Row& r : rows) {
    const Row*& s = smallest[{r.model, r.cluster}];
    if (s == nullptr || r.gpus < s->gpus)
      s = &r;
  }
  for (Row& r : rows) {
    const Row* s = smallest[{r.model, r.cluster}];
    r.scaling_efficiency = (r.best.tokens_per_s / static_cast<double>(r.gpus)) /
                           (s->best.tokens_per_s / static_cast<double>(s->gpus));
  }

  if (const auto file = parsed.value("--csv"))
    write_file_atomically(*file, [&](std::ostream& csv) { write_csv(csv, rows); }, "--csv");
  if (plot)
    render_plot(*plot, rows, have_tokens, have_price);
  if (json) {
    traces::JsonWriter w(out);
    w.begin_array();
    for (const Row& r : rows) {
      const ParallelPlan& p = r.best.estimate.candidate.plan;
      w.begin_object();
      w.field("model", r.model);
      w.field("cluster", r.cluster);
      w.field("gpus", r.gpus);
      write_plan_json(w, p);
      w.field("iteration_time_s", r.best.iteration_time_s);
      w.field("tokens_per_s", r.best.tokens_per_s);
      w.field("mfu", r.best.mfu);
      w.field("peak_memory_bytes", r.best.estimate.candidate.peak_memory_bytes);
      w.field("time_to_train_s", r.time_to_train_s);
      w.field("gpu_hours", r.gpu_hours);
      w.field("cost", r.cost);
      w.field("scaling_efficiency", r.scaling_efficiency);
      w.end_object();
    }
    w.end_array();
    out << "\n";
    return 0;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-12s %-10s %6s  %-46s %9s %12s %6s %10s %12s %12s %7s\n", "model", "cluster",
                "GPUs", "best plan", "iter s", "tokens/s", "MFU", "train days", "GPU-hours", "cost", "scaling");
  out << line;
  for (const Row& r : rows) {
    const ParallelPlan& p = r.best.estimate.candidate.plan;
    char plan_text[128];
    std::snprintf(plan_text, sizeof plan_text, "tp %lld pp %lld dp %lld mb %lld %s%s %s",
                  static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
                  static_cast<long long>(p.micro_batch), to_string(p.schedule).c_str(),
                  p.schedule == Schedule::Interleaved ? (" v" + std::to_string(p.chunks)).c_str() : "",
                  to_string(p.recompute).c_str());
    std::snprintf(line, sizeof line, "%-12s %-10s %6lld  %-46s %9.4f %12.0f %5.1f%% %10s %12s %12s %6.1f%%\n",
                  r.model.c_str(), r.cluster.c_str(), static_cast<long long>(r.gpus), plan_text,
                  r.best.iteration_time_s, r.best.tokens_per_s, 100 * r.best.mfu,
                  csv_number("%.2f", r.time_to_train_s / 86400).c_str(), csv_number("%.0f", r.gpu_hours).c_str(),
                  csv_number("%.0f", r.cost).c_str(), 100 * r.scaling_efficiency);
    out << line;
  }
  return 0;
}

} // namespace gputwin::cli
