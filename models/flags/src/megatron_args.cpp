#include "gputwin/models/megatron_args.hpp"

#include "gputwin/models/moe_layer_freq.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/launch_line.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

namespace gputwin::cli {

namespace {

enum class Kind { Switch, Integer, Number, Text, List }; // List: one or more values (argparse nargs='+' / '*')

// The Megatron-LM arguments gputwin reads (megatron/training/arguments.py, and the TransformerConfig fields its
// ArgumentGroupFactory turns into arguments: --num-layers, --normalization, --disable-bias-linear, ...). Every other
// argument of the file is named in the "ignored" note.
const std::map<std::string, Kind>& read_arguments()
{
  static const std::map<std::string, Kind> arguments = {
      // model
      {"--num-layers", Kind::Integer}, {"--hidden-size", Kind::Integer}, {"--num-attention-heads", Kind::Integer},
      {"--seq-length", Kind::Integer}, {"--max-position-embeddings", Kind::Integer},
      {"--ffn-hidden-size", Kind::Integer}, {"--group-query-attention", Kind::Switch},
      {"--num-query-groups", Kind::Integer}, {"--kv-channels", Kind::Integer}, {"--swiglu", Kind::Switch},
      {"--squared-relu", Kind::Switch}, {"--openai-gelu", Kind::Switch}, {"--normalization", Kind::Text},
      {"--apply-layernorm-1p", Kind::Switch}, {"--position-embedding-type", Kind::Text},
      {"--use-rotary-position-embeddings", Kind::Switch}, {"--untie-embeddings-and-output-weights", Kind::Switch},
      {"--disable-bias-linear", Kind::Switch}, {"--add-qkv-bias", Kind::Switch}, {"--qk-layernorm", Kind::Switch},
      {"--hidden-dropout", Kind::Number}, {"--attention-dropout", Kind::Number}, {"--vocab-size", Kind::Integer},
      {"--tokenizer-type", Kind::Text}, {"--make-vocab-size-divisible-by", Kind::Integer},
      {"--window-size", Kind::Text}, {"--num-experts", Kind::Integer}, {"--multi-latent-attention", Kind::Switch},
      {"--bf16", Kind::Switch}, {"--fp16", Kind::Switch},
      // plan
      {"--tensor-model-parallel-size", Kind::Integer}, {"--pipeline-model-parallel-size", Kind::Integer},
      {"--context-parallel-size", Kind::Integer}, {"--num-layers-per-virtual-pipeline-stage", Kind::Integer},
      {"--virtual-pipeline-model-parallel-size", Kind::Integer},
      {"--num-virtual-stages-per-pipeline-rank", Kind::Integer},
      {"--decoder-first-pipeline-num-layers", Kind::Integer}, {"--decoder-last-pipeline-num-layers", Kind::Integer},
      {"--micro-batch-size", Kind::Integer}, {"--global-batch-size", Kind::Integer},
      {"--sequence-parallel", Kind::Switch}, {"--recompute-activations", Kind::Switch},
      {"--recompute-granularity", Kind::Text}, {"--recompute-method", Kind::Text},
      {"--recompute-num-layers", Kind::Integer}, {"--recompute-modules", Kind::List},
      {"--use-distributed-optimizer", Kind::Switch},
      {"--overlap-grad-reduce", Kind::Switch}, {"--overlap-param-gather", Kind::Switch},
      {"--tp-comm-overlap", Kind::Switch}, {"--fp8-format", Kind::Text}, {"--fp8-recipe", Kind::Text},
      {"--fp8-param-gather", Kind::Switch}, {"--use-flash-attn", Kind::Switch}, {"--attention-backend", Kind::Text},
      {"--cross-entropy-loss-fusion", Kind::Switch}, {"--cross-entropy-fusion-impl", Kind::Text},
      {"--grad-reduce-in-bf16", Kind::Switch}, {"--fp4-format", Kind::Text}, {"--fp4-recipe", Kind::Text},
      {"--fp4-param-gather", Kind::Switch}, {"--use-torch-fsdp2", Kind::Switch},
      {"--use-megatron-fsdp", Kind::Switch}, {"--data-parallel-sharding-strategy", Kind::Text},
      {"--torch-fsdp2-no-reshard-after-forward", Kind::Switch},
      // mixture of experts and multi-latent attention (TransformerConfig's moe_* and MLA fields, arguments.py)
      {"--moe-router-topk", Kind::Integer}, {"--moe-ffn-hidden-size", Kind::Integer},
      {"--moe-shared-expert-intermediate-size", Kind::Integer}, {"--moe-layer-freq", Kind::Text},
      {"--moe-router-score-function", Kind::Text}, {"--moe-router-num-groups", Kind::Integer},
      {"--moe-router-group-topk", Kind::Integer}, {"--moe-router-load-balancing-type", Kind::Text},
      {"--moe-grouped-gemm", Kind::Switch}, {"--moe-token-dispatcher-type", Kind::Text},
      {"--moe-enable-deepep", Kind::Switch}, {"--moe-flex-dispatcher-backend", Kind::Text},
      {"--moe-expert-capacity-factor", Kind::Number}, {"--moe-pad-expert-input-to-capacity", Kind::Switch},
      {"--expert-model-parallel-size", Kind::Integer}, {"--expert-tensor-parallel-size", Kind::Integer},
      {"--overlap-moe-expert-parallel-comm", Kind::Switch}, {"--moe-shared-expert-overlap", Kind::Switch},
      {"--mtp-num-layers", Kind::Integer}, {"--q-lora-rank", Kind::Integer}, {"--kv-lora-rank", Kind::Integer},
      {"--qk-head-dim", Kind::Integer}, {"--qk-pos-emb-head-dim", Kind::Integer}, {"--v-head-dim", Kind::Integer},
  };
  return arguments;
}

std::string join(const std::vector<std::string>& items, const std::string& separator)
{
  std::string out;
  for (const std::string& item : items)
    out += (out.empty() ? "" : separator) + item;
  return out;
}

// The read arguments of one file (the last of a repeated one wins, as with argparse), typed on access.
class MegatronArgs {
public:
  MegatronArgs(const LaunchLine& launch, const std::string& path) : path_(path)
  {
    std::set<std::string> ignored;
    for (const LaunchArgument& a : launch.script_args) {
      const auto known = read_arguments().find(a.name);
      if (known == read_arguments().end()) {
        if (ignored.insert(a.name).second)
          ignored_.push_back(printable(a.name));
        continue;
      }
      if (known->second == Kind::Switch && !a.values.empty())
        fail(a, "takes no value, got '" + a.values.front() + "'");
      if (known->second == Kind::List && a.values.empty())
        fail(a, "expected one or more values");
      if (known->second != Kind::Switch && known->second != Kind::List && a.values.size() != 1)
        fail(a, a.values.empty() ? "expected a value" : "expected one value, got " + join(a.values, " "));
      args_[a.name] = a;
    }
  }

  bool on(const std::string& name) const { return args_.count(name) != 0; }
  // A list argument's values, each split at spaces and commas and stripped of the brackets a YAML-quoted list
  // keeps ("[layernorm mla_up_proj]"); empty when absent.
  std::vector<std::string> list(const std::string& name) const
  {
    std::vector<std::string> items;
    if (const LaunchArgument* a = find(name))
      for (const std::string& value : a->values) {
        std::string item;
        for (const char c : value + " ") {
          if (c == ' ' || c == ',' || c == '[' || c == ']') {
            if (!item.empty())
              items.push_back(item);
            item.clear();
          } else {
            item += c;
          }
        }
      }
    return items;
  }
  const LaunchArgument* find(const std::string& name) const
  {
    const auto it = args_.find(name);
    return it == args_.end() ? nullptr : &it->second;
  }
  std::optional<std::string> text(const std::string& name) const
  {
    const LaunchArgument* a = find(name);
    return a ? std::optional<std::string>(a->values.front()) : std::nullopt;
  }
  // An integer argument, >= `min` (the one-line error names the file, line and argument).
  std::optional<int64_t> integer(const std::string& name, int64_t min = 1) const
  {
    const LaunchArgument* a = find(name);
    if (!a)
      return std::nullopt;
    const std::string expected = min == 1 ? "a positive integer" : "an integer >= " + std::to_string(min);
    int64_t value = 0;
    try {
      value = parse_integer(name, a->values.front());
    } catch (const InputError&) {
      fail(*a, "expected " + expected + ", got '" + a->values.front() + "'");
    }
    if (value < min)
      fail(*a, "expected " + expected + ", got " + a->values.front());
    return value;
  }
  std::optional<double> number(const std::string& name) const
  {
    const LaunchArgument* a = find(name);
    if (!a)
      return std::nullopt;
    const std::string& text = a->values.front();
    double value = -1;
    size_t used = 0;
    try {
      value = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || text.empty() || !(value >= 0 && value <= 1))
      fail(*a, "expected a probability from 0 to 1, got '" + text + "'");
    return value;
  }
  int64_t required(const std::string& name) const
  {
    if (const std::optional<int64_t> v = integer(name))
      return *v;
    throw InputError(path_ + ": " + name + ": missing (Megatron-LM requires it; expected " + name + " N)");
  }
  [[noreturn]] void fail(const LaunchArgument& a, const std::string& what) const
  {
    throw InputError(path_ + ":" + std::to_string(a.line) + ": " + printable(a.name + ": " + what));
  }
  [[noreturn]] void fail(const std::string& name, const std::string& what) const
  {
    if (const LaunchArgument* a = find(name))
      fail(*a, what);
    throw InputError(path_ + ": " + name + ": " + printable(what));
  }
  const std::vector<std::string>& ignored() const { return ignored_; }
  const std::string& path() const { return path_; }

private:
  std::string path_;
  std::map<std::string, LaunchArgument> args_;
  std::vector<std::string> ignored_; // in the order of the file, once each
};

// The product of `factors` (sizes of the file), an InputError naming the file and `what` if it overflows.
int64_t product(const std::string& path, const std::string& what, std::initializer_list<int64_t> factors)
{
  return checked_product(factors, (path + ": " + what).c_str());
}

int64_t ceil_div(int64_t a, int64_t b)
{
  return a / b + (a % b != 0 ? 1 : 0);
}

class Flags {
public:
  void set(const std::string& flag, int64_t value) { set(flag, std::to_string(value)); }
  void set(const std::string& flag, const std::string& value)
  {
    args_.push_back(flag);
    args_.push_back(value);
  }
  void on(const std::string& flag) { args_.push_back(flag); }
  std::vector<std::string> take() { return std::move(args_); }

private:
  std::vector<std::string> args_;
};

// Mixture of experts (TransformerConfig's moe_* fields with arguments.py's defaults: top-2, expert width = the
// dense FFN's, every layer MoE, softmax router, aux loss, one shared-expert block of the given width).
void moe_model_flags(const MegatronArgs& m, int64_t layers, Flags& out, std::vector<std::string>& notes)
{
  const std::optional<int64_t> experts = m.integer("--num-experts");
  if (!experts)
    return;
  out.set("--num-experts", *experts);
  out.set("--moe-topk", m.integer("--moe-router-topk").value_or(2));
  if (const std::optional<int64_t> width = m.integer("--moe-ffn-hidden-size"))
    out.set("--moe-ffn-hidden", *width);
  if (const std::optional<int64_t> shared = m.integer("--moe-shared-expert-intermediate-size")) {
    out.set("--moe-shared-experts", 1);
    out.set("--moe-shared-ffn-hidden", *shared);
  }
  if (const std::optional<std::string> freq = m.text("--moe-layer-freq")) {
    std::optional<MoeLayerLayout> layout;
    try {
      layout = moe_layer_layout(moe_layer_pattern(*freq, layers));
    } catch (const std::invalid_argument& e) {
      m.fail("--moe-layer-freq", e.what());
    }
    if (!layout)
      m.fail("--moe-layer-freq", "'" + *freq + "': gputwin models the first layers dense, then every P-th layer "
                                 "(expected e.g. ([0]*3+[1]*58) or [0,1]*24)");
    out.set("--moe-dense-first-layers", layout->dense_first_layers);
    out.set("--moe-layer-period", layout->layer_period);
  }
  const std::string score = m.text("--moe-router-score-function").value_or("softmax");
  if (score != "softmax" && score != "sigmoid")
    m.fail("--moe-router-score-function", "expected softmax or sigmoid, got '" + score + "'");
  out.set("--moe-router", score);
  if (const std::optional<int64_t> groups = m.integer("--moe-router-num-groups"))
    out.set("--moe-router-groups", *groups);
  if (const std::optional<int64_t> topk = m.integer("--moe-router-group-topk"))
    out.set("--moe-router-group-topk", *topk);
  if (m.text("--moe-router-load-balancing-type") == std::optional<std::string>("none"))
    out.on("--moe-no-aux-loss");
  if (const std::optional<int64_t> mtp = m.integer("--mtp-num-layers", 0))
    out.set("--mtp-layers", *mtp);
  if (!m.on("--moe-grouped-gemm"))
    notes.push_back("no --moe-grouped-gemm: Megatron-Core runs the local experts one by one (SequentialMLP); "
                    "modelled as Transformer Engine's grouped GEMM");
}

// Multi-latent attention (arguments.py _add_mla_args defaults: no query compression, kv rank 32, head dims
// 128 + 64 rotary, value 128).
void mla_model_flags(const MegatronArgs& m, Flags& out)
{
  if (!m.on("--multi-latent-attention"))
    return;
  out.set("--q-lora-rank", m.integer("--q-lora-rank", 0).value_or(0));
  out.set("--kv-lora-rank", m.integer("--kv-lora-rank").value_or(32));
  out.set("--qk-nope-head-dim", m.integer("--qk-head-dim").value_or(128));
  out.set("--qk-rope-head-dim", m.integer("--qk-pos-emb-head-dim").value_or(64));
  out.set("--v-head-dim", m.integer("--v-head-dim").value_or(128));
}

// The model: Megatron's defaults are the paper's GPT, which are gputwin's, so only what differs is set.
void model_flags(const MegatronArgs& m, const ParsedArgs& explicit_args, Flags& out, std::vector<std::string>& notes)
{
  const int64_t layers = m.required("--num-layers"), hidden = m.required("--hidden-size"),
                heads = m.required("--num-attention-heads");
  out.set("--layers", layers);
  out.set("--hidden", hidden);
  out.set("--heads", heads);
  const std::optional<int64_t> seq = m.integer("--seq-length");
  if (!seq && !explicit_args.has("--seq-len"))
    m.fail("--seq-length", "missing (expected --seq-length N, or --seq-len N on the command line)");
  if (seq)
    out.set("--seq-len", *seq);
  // Vocabulary: the tokenizer's size; Megatron pads it to a multiple of 128 x tp itself, as gputwin does
  // (padded_vocab), so the size before padding is passed on.
  const std::optional<std::string> tokenizer = m.text("--tokenizer-type");
  if (tokenizer && *tokenizer == "GPT2BPETokenizer") {
    out.set("--vocab", 50257); // GPT-2's BPE vocabulary (gpt2-vocab.json)
  } else if (const std::optional<int64_t> vocab = m.integer("--vocab-size")) {
    out.set("--vocab", *vocab);
  } else if (!explicit_args.has("--vocab")) {
    if (tokenizer)
      m.fail("--tokenizer-type", "the vocabulary size of " + *tokenizer +
                                     " is in its files (expected --vocab-size N in the file, or --vocab N)");
    m.fail("--vocab-size", "missing, and no --tokenizer-type GPT2BPETokenizer (expected --vocab-size N in the file, "
                           "or --vocab N)");
  }
  if (const std::optional<int64_t> divisor = m.integer("--make-vocab-size-divisible-by"); divisor && *divisor != 128)
    notes.push_back("--make-vocab-size-divisible-by " + std::to_string(*divisor) +
                    ": not modelled, the vocabulary is padded to a multiple of 128 x tp");
  if (m.on("--group-query-attention")) {
    const int64_t groups = m.integer("--num-query-groups").value_or(1); // arguments.py: default 1
    if (groups != heads)
      out.set("--num-query-groups", groups);
  } else if (m.on("--num-query-groups")) {
    notes.push_back("--num-query-groups without --group-query-attention: multi-head attention (Megatron-LM ignores "
                    "it too)");
  }
  // --kv-channels: the width of one head (Megatron's default hidden / heads); another one is the head size (Qwen3:
  // --kv-channels 128 with --hidden-size 4096 and 64 heads).
  if (const std::optional<int64_t> kv_channels = m.integer("--kv-channels"); kv_channels && product(m.path(), "--kv-channels", {*kv_channels, heads}) != hidden)
    out.set("--head-size", *kv_channels);
  if (m.on("--swiglu") && m.on("--squared-relu"))
    m.fail("--squared-relu", "contradicts --swiglu (expected one activation)");
  // arguments.py: without --ffn-hidden-size, 4h, or for SwiGLU int((4 * h * 2 / 3) / 64) * 64 (= floor(h / 24) * 64).
  const int64_t four_h = product(m.path(), "--hidden-size", {4, hidden});
  const int64_t ffn = m.integer("--ffn-hidden-size").value_or(m.on("--swiglu") ? hidden / 24 * 64 : four_h);
  if (ffn != four_h)
    out.set("--ffn-hidden", ffn);
  if (m.on("--swiglu"))
    out.set("--activation", "swiglu");
  if (m.on("--squared-relu"))
    out.set("--activation", "squared-relu");
  if (const std::optional<std::string> norm = m.text("--normalization")) {
    if (*norm == "RMSNorm")
      out.set("--norm", "rmsnorm");
    else if (*norm != "LayerNorm")
      m.fail("--normalization", "expected LayerNorm or RMSNorm, got '" + *norm + "'");
  }
  const std::string position = m.text("--position-embedding-type")
                                   .value_or(m.on("--use-rotary-position-embeddings") ? "rope" : "learned_absolute");
  if (position == "rope")
    out.set("--position", "rope");
  else if (position != "learned_absolute")
    m.fail("--position-embedding-type", "expected rope or learned_absolute, got '" + position + "'");
  if (position == "learned_absolute" && seq)
    if (const std::optional<int64_t> table = m.integer("--max-position-embeddings"); table && *table != *seq)
      notes.push_back("--max-position-embeddings " + std::to_string(*table) + ": the learned position table is "
                      "modelled with --seq-length rows (" + std::to_string(*seq) + ")");
  if (m.on("--untie-embeddings-and-output-weights"))
    out.on("--untie-embeddings");
  // gputwin has one switch for the linear layers' biases: all of them or none.
  if (m.on("--disable-bias-linear")) {
    out.on("--no-bias");
    if (m.on("--add-qkv-bias"))
      notes.push_back("--add-qkv-bias: approximated as no biases (the QKV bias, (a + 2g) x h / a parameters per "
                      "layer, is not counted)");
  }
  if (m.on("--qk-layernorm") && !m.on("--multi-latent-attention")) // MLA's latent norms are modelled
    notes.push_back("--qk-layernorm: not modelled (a norm of each head's query and key; 2 x h / a parameters per "
                    "layer)");
  if (m.on("--window-size"))
    notes.push_back("--window-size: sliding-window attention is modelled as full causal attention over the sequence");
  // arguments.py: --hidden-dropout and --attention-dropout default to 0.1; gputwin switches both together.
  const double hidden_dropout = m.number("--hidden-dropout").value_or(0.1);
  const double attention_dropout = m.number("--attention-dropout").value_or(0.1);
  if ((hidden_dropout == 0) != (attention_dropout == 0))
    m.fail(hidden_dropout == 0 ? "--attention-dropout" : "--hidden-dropout",
           "gputwin models hidden and attention dropout together (expected --hidden-dropout and --attention-dropout "
           "both 0 or both > 0)");
  if (hidden_dropout == 0)
    out.on("--no-dropout");
  moe_model_flags(m, layers, out, notes);
  mla_model_flags(m, out);
}

// The most layers one model chunk holds (block recompute covers a chunk's first N layers).
int64_t most_layers_per_chunk(int64_t layers, int64_t pp, int64_t chunks, int64_t first, int64_t last)
{
  const int64_t uneven = (first > 0 ? 1 : 0) + (last > 0 ? 1 : 0);
  int64_t most = std::max(first, last);
  if (pp > uneven)
    most = std::max(most, ceil_div(layers - first - last, pp - uneven));
  return ceil_div(most, chunks);
}

// The parallel sizes as the run uses them: the file's, with what the command line gives instead (Megatron derives
// the data-parallel size and the virtual stages from these).
struct RunShape {
  int64_t tp = 1, pp = 1, cp = 1, layers = 1, first = 0, last = 0, chunks = 1;
};

RunShape pipeline_flags(const MegatronArgs& m, const ParsedArgs& explicit_args, Flags& out)
{
  const int64_t tp = m.integer("--tensor-model-parallel-size").value_or(1);
  const int64_t pp = m.integer("--pipeline-model-parallel-size").value_or(1);
  const int64_t cp = m.integer("--context-parallel-size").value_or(1);
  out.set("--tp", tp);
  out.set("--pp", pp);
  out.set("--cp", cp);
  RunShape run;
  run.tp = explicit_args.integer("--tp").value_or(tp);
  run.pp = explicit_args.integer("--pp").value_or(pp);
  run.cp = explicit_args.integer("--cp").value_or(cp);
  run.layers = explicit_args.integer("--layers").value_or(m.integer("--num-layers").value_or(1));
  run.first = m.integer("--decoder-first-pipeline-num-layers").value_or(0);
  run.last = m.integer("--decoder-last-pipeline-num-layers").value_or(0);
  if (run.first > 0)
    out.set("--pp-first-stage-layers", run.first);
  if (run.last > 0)
    out.set("--pp-last-stage-layers", run.last);

  // Virtual pipeline stages (arguments.py: --num-layers-per-virtual-pipeline-stage n gives (L / pp) / n; NeMo and
  // older Megatron-LM name the count --virtual-pipeline-model-parallel-size).
  const char* vp_sources[] = {"--num-layers-per-virtual-pipeline-stage", "--virtual-pipeline-model-parallel-size",
                              "--num-virtual-stages-per-pipeline-rank"};
  std::vector<std::string> given;
  for (const char* name : vp_sources)
    if (m.on(name))
      given.emplace_back(name);
  if (given.size() > 1)
    m.fail(given[1], "contradicts " + given[0] + " (expected one way to set the virtual pipeline size)");
  if (const std::optional<int64_t> per_stage = m.integer("--num-layers-per-virtual-pipeline-stage")) {
    if (run.first > 0 || run.last > 0)
      m.fail("--num-layers-per-virtual-pipeline-stage", "not with uneven first/last stages (expected "
                                                        "--num-virtual-stages-per-pipeline-rank, as Megatron-LM asks)");
    if (run.layers % run.pp != 0 || (run.layers / run.pp) % *per_stage != 0)
      m.fail("--num-layers-per-virtual-pipeline-stage",
             std::to_string(*per_stage) + " does not divide the " + std::to_string(run.layers) + " layers over " +
                 std::to_string(run.pp) + " stages (expected a divisor of the layers per stage)");
    run.chunks = run.layers / run.pp / *per_stage;
  } else if (!given.empty()) {
    run.chunks = *m.integer(given[0]);
  }
  if (run.chunks > 1 && !(explicit_args.has("--schedule") && explicit_args.value("--schedule") != "interleaved")) {
    out.set("--schedule", "interleaved");
    out.set("--chunks", run.chunks);
  } else {
    out.set("--schedule", "1f1b");
  }

  if (const std::optional<int64_t> micro = m.integer("--micro-batch-size"))
    out.set("--micro-batch", *micro);
  else if (!explicit_args.has("--micro-batch"))
    m.fail("--micro-batch-size", "missing (Megatron-LM requires it; expected --micro-batch-size N)");
  if (const std::optional<int64_t> global = m.integer("--global-batch-size"))
    out.set("--global-batch", *global);
  return run;
}

// Recompute: --recompute-activations is selective; full recompute of every layer is uniform with one layer per
// checkpoint, or block over all of a chunk's layers. Anything in between is not what gputwin models.
std::string recompute_mode(const MegatronArgs& m, const RunShape& run)
{
  std::string recompute =
      m.on("--recompute-activations") ? "selective" : m.text("--recompute-granularity").value_or("none");
  if (recompute != "none" && recompute != "selective" && recompute != "full")
    m.fail("--recompute-granularity", "expected full or selective, got '" + recompute + "'");
  if (recompute == "selective" && m.on("--recompute-method") && !m.on("--recompute-activations"))
    m.fail("--recompute-method", "not with --recompute-granularity selective (Megatron-LM refuses it too)");
  if (recompute != "full")
    return recompute;
  const std::optional<std::string> method = m.text("--recompute-method");
  if (!method || (*method != "uniform" && *method != "block"))
    m.fail("--recompute-method", "expected uniform or block with --recompute-granularity full, got " +
                                     (method ? "'" + *method + "'" : std::string("none")));
  const int64_t n = m.integer("--recompute-num-layers", 0).value_or(1);
  const int64_t chunk_layers = most_layers_per_chunk(run.layers, run.pp, run.chunks, run.first, run.last);
  if (*method == "uniform" && n != 1)
    m.fail("--recompute-num-layers", std::to_string(n) + " layers per checkpoint: gputwin's full recompute stores "
                                     "every layer's input (expected 1 with --recompute-method uniform)");
  if (*method == "block" && n == 0)
    return "none";
  if (*method == "block" && n < chunk_layers)
    m.fail("--recompute-num-layers", std::to_string(n) + " of a chunk's " + std::to_string(chunk_layers) +
                                         " layers recomputed: partial full recompute is not modelled (expected "
                                         "all of them, or --recompute-method uniform --recompute-num-layers 1)");
  return recompute;
}

// The GEMM precision (Megatron-Core transformer_config.py): --fp8-format hybrid|e4m3 with --fp8-recipe delayed
// (the default) is --fp8, with --fp8-recipe mxfp8 --precision mxfp8 (TE MXFP8BlockScaling); --fp4-format e2m1
// with --fp4-recipe nvfp4 (the default) is --precision nvfp4 (TE NVFP4BlockScaling), its weights gathered in
// NVFP4 with --fp4-param-gather; --fp8-recipe tensorwise is --fp8-recipe tensorwise. The other FP8 recipes
// (blockwise, custom) are modelled as delayed scaling, with a note.
void precision_flags(const MegatronArgs& m, const ParsedArgs& explicit_args, Flags& out,
                     std::vector<std::string>& notes)
{
  const std::optional<std::string> fp8_format = m.text("--fp8-format");
  const std::optional<std::string> fp4_format = m.text("--fp4-format");
  if (fp8_format && fp4_format) // arguments.py: "--fp4-format and --fp8-format cannot be used simultaneously"
    m.fail("--fp4-format", "cannot be used with --fp8-format (expected one of them)");
  if (m.on("--fp4-param-gather") && !fp4_format) // arguments.py: "must be used together with --fp4-format"
    m.fail("--fp4-param-gather", "needs --fp4-format");
  bool param_gather = m.on("--fp8-param-gather");
  if (fp8_format) {
    if (*fp8_format != "hybrid" && *fp8_format != "e4m3")
      m.fail("--fp8-format", "expected hybrid or e4m3, got '" + *fp8_format + "'");
    const std::optional<std::string> recipe = m.text("--fp8-recipe");
    if (recipe == "mxfp8") {
      out.set("--precision", "mxfp8");
    } else {
      out.on("--fp8");
      if (recipe == "tensorwise")
        out.set("--fp8-recipe", "tensorwise");
      else if (recipe && *recipe != "delayed")
        notes.push_back("--fp8-recipe " + printable(*recipe) + ": modelled as delayed scaling");
    }
  } else if (fp4_format) {
    if (*fp4_format != "e2m1")
      m.fail("--fp4-format", "expected e2m1, got '" + *fp4_format + "'");
    if (const std::optional<std::string> recipe = m.text("--fp4-recipe"); recipe && *recipe != "nvfp4")
      m.fail("--fp4-recipe", "expected nvfp4 (a custom quantizer factory is not modelled), got '" + *recipe + "'");
    out.set("--precision", "nvfp4");
    param_gather = m.on("--fp4-param-gather");
    if (param_gather)
      out.on("--fp8-param-gather"); // gputwin's --fp8-param-gather gathers in the plan's precision
  }
  // Megatron keeps BF16 weights unless --fp8-param-gather (--fp4-param-gather) (gputwin's default with the
  // distributed optimizer is NeMo's recipe, which sets it).
  if ((fp8_format || fp4_format) && !param_gather && !explicit_args.has("--fp8-param-gather"))
    out.on("--no-fp8-param-gather");
}

// Data-parallel sharding, as the ZeRO stage (ARCHITECTURE.md, ZeRO-2/3 and FSDP). Megatron-LM's arguments.py:
// --use-distributed-optimizer shards the optimizer states (ZeRO-1); --use-megatron-fsdp shards what
// --data-parallel-sharding-strategy names (choices no_shard, optim, optim_grads, optim_grads_params, the default
// optim_grads_params: ZeRO 0 to 3, Megatron-FSDP's unit modules being gputwin's --zero 2|3 units);
// --use-torch-fsdp2 is PyTorch FSDP2 (gputwin's --fsdp), which arguments.py asserts against the distributed optimizer
// and training/config/common_config.py against Megatron-FSDP ("Cannot be used together with use_torch_fsdp2"); its
// --torch-fsdp2-no-reshard-after-forward ("Set to enable FSDP ZeRO-2") is not modelled. The command line's --zero or
// --fsdp wins.
void sharding_flags(const MegatronArgs& m, const ParsedArgs& explicit_args, Flags& out, std::vector<std::string>& notes)
{
  static const std::pair<const char*, int> strategies[] = {
      {"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
  std::optional<int> strategy_stage;
  const std::optional<std::string> strategy = m.text("--data-parallel-sharding-strategy");
  for (const auto& [name, stage] : strategies)
    if (strategy == name)
      strategy_stage = stage;
  if (strategy && !strategy_stage)
    m.fail("--data-parallel-sharding-strategy",
           "expected no_shard, optim, optim_grads or optim_grads_params, got '" + *strategy + "'");
  const bool torch_fsdp2 = m.on("--use-torch-fsdp2"), megatron_fsdp = m.on("--use-megatron-fsdp");
  if (torch_fsdp2 && megatron_fsdp)
    m.fail("--use-megatron-fsdp", "cannot be used with --use-torch-fsdp2 (expected one FSDP)");
  if (torch_fsdp2 && m.on("--use-distributed-optimizer")) // arguments.py asserts it
    m.fail("--use-distributed-optimizer", "not supported with --use-torch-fsdp2 (Megatron-LM asserts it; expected "
                                          "one of them)");
  if (m.on("--torch-fsdp2-no-reshard-after-forward") && torch_fsdp2)
    m.fail("--torch-fsdp2-no-reshard-after-forward",
           "FSDP2 without resharding (ZeRO-2) is not modelled: gputwin's --fsdp reshards, ZeRO-3 (expected "
           "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads for ZeRO-2)");
  if (m.on("--torch-fsdp2-no-reshard-after-forward") && !torch_fsdp2)
    notes.push_back("--torch-fsdp2-no-reshard-after-forward: not used without --use-torch-fsdp2");
  if (strategy && !megatron_fsdp)
    notes.push_back("--data-parallel-sharding-strategy " + *strategy +
                    ": not used without --use-megatron-fsdp (Megatron-LM reads it for Megatron-FSDP only)");
  if (explicit_args.has("--zero") || explicit_args.has("--fsdp"))
    return;
  if (torch_fsdp2)
    out.on("--fsdp");
  else if (megatron_fsdp)
    out.set("--zero", strategy_stage.value_or(3));
  else if (m.on("--use-distributed-optimizer"))
    out.set("--zero", 1);
}

// The optimizer, overlaps, precision and kernels.
void kernel_flags(const MegatronArgs& m, const ParsedArgs& explicit_args, Flags& out, std::vector<std::string>& notes)
{
  sharding_flags(m, explicit_args, out, notes);
  for (const char* overlap : {"--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap",
                              "--grad-reduce-in-bf16", "--fp8-param-gather"})
    if (m.on(overlap))
      out.on(overlap);
  precision_flags(m, explicit_args, out, notes);
  if (m.on("--use-flash-attn"))
    out.set("--attention", "flash");
  if (const std::optional<std::string> backend = m.text("--attention-backend")) {
    if (*backend == "flash" || *backend == "fused")
      out.set("--attention", "flash");
    else if (*backend == "unfused" || *backend == "local")
      out.set("--attention", "unfused");
    else if (*backend != "auto")
      m.fail("--attention-backend", "expected flash, fused, unfused, local or auto, got '" + *backend + "'");
  }
  if (m.on("--cross-entropy-loss-fusion")) {
    if (m.text("--cross-entropy-fusion-impl").value_or("native") == "te")
      out.on("--cross-entropy-fusion");
    else
      notes.push_back("--cross-entropy-loss-fusion: Megatron's native fused cross entropy is not modelled (only "
                      "--cross-entropy-fusion-impl te)");
  }
  if (!m.on("--bf16") && !m.on("--fp16"))
    notes.push_back("neither --bf16 nor --fp16: Megatron-LM would train in FP32; gputwin models BF16 mixed precision");
}

// Data-parallel size, as arguments.py derives it: world size / (tp x pp x cp).
void data_parallel_flag(const LaunchLine& launch, const std::string& path, const RunShape& run, Flags& out,
                        std::vector<std::string>& notes)
{
  const std::optional<WorldSize> world = world_size(launch, path);
  if (!world) {
    notes.push_back("no world size (torchrun --nnodes x --nproc-per-node, or WORLD_SIZE=): data-parallel size from "
                    "--dp (default 1)");
    return;
  }
  const int64_t model_parallel = product(path, "tp x pp x cp", {run.tp, run.pp, run.cp});
  if (world->processes % model_parallel != 0)
    throw InputError(path + ": world size " + std::to_string(world->processes) + " (" + world->source +
                     ") is not divisible by tp x pp x cp = " + std::to_string(model_parallel) +
                     " (expected a multiple, as Megatron-LM asserts)");
  out.set("--dp", world->processes / model_parallel);
}

// The expert grid and token exchange of a MoE run: --expert-model-parallel-size / --expert-tensor-parallel-size
// (default tp), the dispatcher (Megatron's default allgather; flex is DeepEP's, or HybridEP's modelled as DeepEP),
// the capacity factor (dropless without it) and the EP all-to-all overlap.
void moe_plan_flags(const MegatronArgs& m, Flags& out, std::vector<std::string>& notes)
{
  if (!m.on("--num-experts"))
    return;
  if (const std::optional<int64_t> ep = m.integer("--expert-model-parallel-size"))
    out.set("--ep", *ep);
  if (const std::optional<int64_t> etp = m.integer("--expert-tensor-parallel-size"))
    out.set("--etp", *etp);
  const std::string dispatcher =
      m.on("--moe-enable-deepep") ? "flex" : m.text("--moe-token-dispatcher-type").value_or("allgather");
  if (dispatcher == "flex") {
    const std::string backend = m.text("--moe-flex-dispatcher-backend").value_or("deepep");
    if (backend != "deepep")
      notes.push_back("--moe-flex-dispatcher-backend " + printable(backend) + ": modelled as DeepEP's two-hop "
                                                                              "dispatch");
    out.set("--moe-dispatcher", "deepep");
  } else if (dispatcher == "alltoall" || dispatcher == "allgather") {
    out.set("--moe-dispatcher", dispatcher);
  } else {
    m.fail("--moe-token-dispatcher-type", "expected allgather, alltoall or flex, got '" + dispatcher + "'");
  }
  if (const std::optional<double> capacity = m.number("--moe-expert-capacity-factor")) {
    std::ostringstream text;
    text << *capacity;
    out.set("--moe-capacity-factor", text.str());
  }
  if (m.on("--overlap-moe-expert-parallel-comm"))
    out.on("--overlap-moe-expert-parallel-comm");
  if (m.on("--moe-shared-expert-overlap"))
    out.on("--moe-shared-expert-overlap");
}

void plan_flags(const MegatronArgs& m, const ParsedArgs& explicit_args, const LaunchLine& launch,
                const std::string& path, Flags& out, std::vector<std::string>& notes)
{
  const RunShape run = pipeline_flags(m, explicit_args, out);
  // arguments.py: sequence parallelism is turned off when tp is 1.
  if (!explicit_args.has("--sp") && !explicit_args.has("--no-sp")) {
    if (m.on("--sequence-parallel") && run.tp == 1)
      notes.push_back("--sequence-parallel with tensor-parallel size 1: off, as Megatron-LM turns it off");
    out.on(m.on("--sequence-parallel") && run.tp > 1 ? "--sp" : "--no-sp");
  }
  const std::string recompute = recompute_mode(m, run);
  out.set("--recompute", recompute);
  // Megatron-Core's --recompute-modules (nargs '*') act at the selective granularity only.
  if (const std::vector<std::string> modules = m.list("--recompute-modules"); !modules.empty()) {
    if (recompute == "selective")
      out.set("--recompute-modules", join(modules, ","));
    else
      notes.push_back("--recompute-modules: ignored without --recompute-granularity selective, as Megatron-Core "
                      "ignores them");
  }
  kernel_flags(m, explicit_args, out, notes);
  moe_plan_flags(m, out, notes);
  if (!explicit_args.has("--dp"))
    data_parallel_flag(launch, path, run, out, notes);
}

} // namespace

Expansion megatron_args_from_text(const std::string& text, const std::string& path, const ParsedArgs& explicit_args)
{
  const LaunchLine launch = parse_launch_line(text, path);
  if (launch.script_args.empty())
    throw InputError(path + ": no Megatron-LM arguments (expected a launch line such as `torchrun ... pretrain_gpt.py "
                     "--num-layers ...`)");
  MegatronArgs m(launch, path);
  Flags out;
  std::vector<std::string> notes;
  if (explicit_args.has("--model"))
    notes.push_back("the model is --model " + *explicit_args.value("--model") + "; the file's model arguments are not "
                    "used");
  else
    model_flags(m, explicit_args, out, notes);
  plan_flags(m, explicit_args, launch, path, out, notes);
  std::vector<std::string> ignored = m.ignored();
  for (const LaunchArgument& a : launch.launcher_args)
    if (a.name != "--nnodes" && a.name != "--nproc-per-node" && a.name != "--nproc_per_node" &&
        std::find(ignored.begin(), ignored.end(), printable(a.name)) == ignored.end())
      ignored.push_back(printable(a.name));
  Expansion expansion;
  expansion.args = out.take();
  if (!ignored.empty())
    expansion.notes.push_back("--megatron-args " + path + ": ignored (not modelled): " + join(ignored, " "));
  for (const std::string& note : notes)
    expansion.notes.push_back("--megatron-args " + path + ": " + note);
  return expansion;
}

Expansion expand_megatron_args(const std::string& path, const ParsedArgs& explicit_args)
{
  std::ifstream in(path);
  if (!in)
    throw InputError("--megatron-args: " + path + ": cannot open the file (expected a Megatron-LM launch line)");
  std::stringstream text;
  text << in.rdbuf();
  return megatron_args_from_text(text.str(), path, explicit_args);
}

} // namespace gputwin::cli
