// HuggingFace config.json files (--model hf:PATH): the dense and mixture-of-experts architectures read field by
// field from the published configurations in tests/data/hf (README.md names their repositories), each equal to the
// catalog's model of that name, unknown architectures refused, and every bad field a one-line error naming the file
// and the field.
#include "gputwin/config/hf_config.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <utility>
#include <vector>

namespace gputwin::config {
namespace {

const std::string data_dir = GPUTWIN_TEST_DATA_DIR "/hf/";

// The InputError of loading `path`, required to be one line; "" if it loaded.
std::string error_of(const std::string& path)
{
  try {
    load_hf_config(path);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "error spans several lines";
    return e.what();
  }
  return "";
}

// A config.json of Meta-Llama-3-8B's fields with each (key, value) of `changes` set (the value as JSON text:
// "\"4096\"" is a string), written to a scratch file.
std::string llama_with(const std::vector<std::pair<std::string, std::string>>& changes)
{
  std::vector<std::pair<std::string, std::string>> fields = {
      {"architectures", "[\"LlamaForCausalLM\"]"}, {"hidden_act", "\"silu\""}, {"hidden_size", "4096"},
      {"intermediate_size", "14336"}, {"max_position_embeddings", "8192"}, {"num_attention_heads", "32"},
      {"num_hidden_layers", "32"}, {"num_key_value_heads", "8"}, {"vocab_size", "128256"},
      {"tie_word_embeddings", "false"}};
  for (const auto& [key, value] : changes) {
    bool replaced = false;
    for (auto& [k, v] : fields)
      if (k == key) {
        v = value;
        replaced = true;
      }
    if (!replaced)
      fields.emplace_back(key, value);
  }
  const std::string path = test_temp_path(changes.front().first + ".json");
  std::ofstream out(path);
  out << "{";
  for (size_t i = 0; i < fields.size(); ++i)
    out << (i ? ",\n  " : "\n  ") << "\"" << fields[i].first << "\": " << fields[i].second;
  out << "\n}\n";
  return path;
}

std::string llama_with(const std::string& key, const std::string& value)
{
  return llama_with({{key, value}});
}

void expect_same_model(const GptConfig& a, const GptConfig& b)
{
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.kv_heads(), b.kv_heads());
  EXPECT_EQ(a.ffn(), b.ffn());
  EXPECT_EQ(a.activation, b.activation);
  EXPECT_EQ(a.norm, b.norm);
  EXPECT_EQ(a.position, b.position);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  EXPECT_EQ(a.bias, b.bias);
  EXPECT_EQ(a.dropout, b.dropout);
}

// `m` is the catalog's model `name` field for field, parameters and activated parameters alike. Not compared: the
// sequence length (the catalog's MoE models train at 4096; a config.json's max_position_embeddings is its context
// limit, which --seq-len overrides).
void expect_catalog_model(const GptConfig& m, const std::string& name)
{
  const CatalogEntry* entry = find_catalog_model(name);
  ASSERT_NE(entry, nullptr) << name;
  const GptConfig& c = entry->model;
  GptConfig at_the_files_seq_len = c;
  at_the_files_seq_len.seq_len = m.seq_len;
  expect_same_model(m, at_the_files_seq_len);
  EXPECT_EQ(m.head_dim(), c.head_dim());
  EXPECT_EQ(m.attention_width(), c.attention_width());
  EXPECT_EQ(m.moe.experts, c.moe.experts);
  EXPECT_EQ(m.moe.topk, c.moe.topk);
  EXPECT_EQ(m.moe.expert_ffn_hidden, c.moe.expert_ffn_hidden);
  EXPECT_EQ(m.moe.shared_width(), c.moe.shared_width());
  EXPECT_EQ(m.moe.dense_first_layers, c.moe.dense_first_layers);
  EXPECT_EQ(m.moe.layer_period, c.moe.layer_period);
  EXPECT_EQ(m.moe.router, c.moe.router);
  EXPECT_EQ(m.moe.router_groups, c.moe.router_groups);
  EXPECT_EQ(m.moe.router_group_topk, c.moe.router_group_topk);
  EXPECT_EQ(m.moe.aux_loss, c.moe.aux_loss);
  EXPECT_EQ(m.moe.mtp_layers, c.moe.mtp_layers);
  EXPECT_EQ(m.mla.q_lora_rank, c.mla.q_lora_rank);
  EXPECT_EQ(m.mla.kv_lora_rank, c.mla.kv_lora_rank);
  EXPECT_EQ(m.mla.qk_nope_head_dim, c.mla.qk_nope_head_dim);
  EXPECT_EQ(m.mla.qk_rope_head_dim, c.mla.qk_rope_head_dim);
  EXPECT_EQ(m.mla.v_head_dim, c.mla.v_head_dim);
  EXPECT_EQ(model_parameters(m, 1), model_parameters(c, 1));
  EXPECT_EQ(activated_parameters(m, 1), activated_parameters(c, 1));
  EXPECT_NO_THROW(validate_model(m));
}

// Meta-Llama-3-8B's config.json: hidden_size 4096, 32 layers of 32 heads with 8 K/V heads, intermediate_size
// 14336, vocab_size 128256, max_position_embeddings 8192, hidden_act silu, untied, no biases, no dropout.
TEST(HfConfig, ReadsLlama3EightBAsTheCatalogsModel)
{
  const HfModel hf = load_hf_config(data_dir + "llama3-8b.json");
  const GptConfig& m = hf.model;
  EXPECT_EQ(m.name, "llama3-8b");
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.heads, 32);
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.kv_heads(), 8);
  EXPECT_EQ(m.ffn(), 14336);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.seq_len, 8192);
  EXPECT_EQ(m.activation, Activation::SwiGlu);
  EXPECT_EQ(m.norm, Norm::RmsNorm);
  EXPECT_EQ(m.position, PositionEmbedding::Rope);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_FALSE(m.bias);
  EXPECT_FALSE(m.dropout);
  EXPECT_TRUE(hf.notes.empty());
  expect_same_model(m, find_catalog_model("llama3-8b")->model);
}

TEST(HfConfig, ReadsLlama3SeventyBAsTheCatalogsModel)
{
  const GptConfig m = load_hf_config(data_dir + "llama3-70b.json").model;
  EXPECT_EQ(m.hidden, 8192);
  EXPECT_EQ(m.heads, 64);
  EXPECT_EQ(m.layers, 80);
  EXPECT_EQ(m.ffn(), 28672);
  expect_same_model(m, find_catalog_model("llama3-70b")->model);
}

// Mistral-7B-v0.1: Llama's layer (32 x 4096, 8 K/V heads, 14336) with a 32000 vocabulary, 32768 positions and a
// 4096-token sliding window, which is noted (timed as full attention).
TEST(HfConfig, ReadsMistralAndNotesItsSlidingWindow)
{
  const HfModel hf = load_hf_config(data_dir + "mistral-7b.json");
  EXPECT_EQ(hf.model.vocab, 32000);
  EXPECT_EQ(hf.model.seq_len, 32768);
  EXPECT_EQ(hf.model.kv_heads(), 8);
  EXPECT_FALSE(hf.model.bias);
  ASSERT_EQ(hf.notes.size(), 1U);
  EXPECT_NE(hf.notes[0].find("sliding_window 4096"), std::string::npos) << hf.notes[0];
  // 7.24B parameters, as Mistral AI states: layers 32 x (attention 2 x 4096^2 + 2 x 4096 x 1024, MLP 3 x 4096 x
  // 14336, norms 2 x 4096), embedding and output 2 x 32000 x 4096, final norm 4096.
  const int64_t layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096;
  EXPECT_EQ(model_parameters(hf.model, 1), 32 * layer + 2 * 32000 * 4096 + 4096);
}

// Qwen2.5-7B: 28 heads of 128 over hidden 3584 with 4 K/V heads, MLP 18944, vocabulary 152064. Its q/k/v biases
// (3584 + 2 x 4 x 128 = 4608 a layer) are what gputwin's all-or-none bias switch leaves out, and says so.
TEST(HfConfig, ReadsQwenTwoAndNotesItsQkvBiases)
{
  const HfModel hf = load_hf_config(data_dir + "qwen2.5-7b.json");
  EXPECT_EQ(hf.model.hidden, 3584);
  EXPECT_EQ(hf.model.heads, 28);
  EXPECT_EQ(hf.model.kv_heads(), 4);
  EXPECT_EQ(hf.model.ffn(), 18944);
  EXPECT_EQ(hf.model.vocab, 152064);
  EXPECT_FALSE(hf.model.bias);
  ASSERT_EQ(hf.notes.size(), 1U) << "use_sliding_window is false: no window note";
  EXPECT_NE(hf.notes[0].find("4608"), std::string::npos) << hf.notes[0];
}

// Qwen3-8B: an explicit head_dim 128 (= 4096 / 32, so expressible), 36 layers, MLP 12288, vocabulary 151936.
TEST(HfConfig, ReadsQwenThreeWithItsHeadDim)
{
  const HfModel hf = load_hf_config(data_dir + "qwen3-8b.json");
  EXPECT_EQ(hf.model.head_dim(), 128);
  EXPECT_EQ(hf.model.layers, 36);
  EXPECT_EQ(hf.model.ffn(), 12288);
  EXPECT_EQ(hf.model.vocab, 151936);
  EXPECT_EQ(hf.model.seq_len, 40960);
  ASSERT_EQ(hf.notes.size(), 1U);
  EXPECT_NE(hf.notes[0].find("query/key norms"), std::string::npos) << hf.notes[0];
}

// mistralai/Mixtral-8x7B-v0.1 config.json (tests/data/hf): 8 experts of 14336, top-2; 46.7B parameters.
TEST(HfConfig, ReadsMixtralExperts)
{
  const HfModel hf = load_hf_config(data_dir + "mixtral-8x7b.json");
  EXPECT_EQ(hf.model.moe.experts, 8);
  EXPECT_EQ(hf.model.moe.topk, 2);
  EXPECT_EQ(hf.model.moe.expert_ffn_hidden, 14336);
  EXPECT_NEAR(static_cast<double>(model_parameters(hf.model, 1)) / 1e9, 46.7, 0.005 * 46.7);
  expect_catalog_model(hf.model, "mixtral-8x7b");
}

// Qwen/Qwen3-30B-A3B config.json (tests/data/hf): 48 layers, 32 heads of head_dim 128 over hidden 2048, 4 K/V heads,
// 128 experts of 768 top-8: the catalog's qwen3-30b-a3b (model card: 30.5B total, 3.3B activated).
TEST(HfConfig, ReadsQwenThreeThirtyBAsTheCatalogsModel)
{
  const HfModel hf = load_hf_config(data_dir + "qwen3-30b-a3b.json");
  EXPECT_EQ(hf.model.head_size, 128);
  EXPECT_EQ(hf.model.moe.expert_ffn_hidden, 768);
  EXPECT_EQ(hf.model.seq_len, 40960);
  expect_catalog_model(hf.model, "qwen3-30b-a3b");
  EXPECT_NEAR(static_cast<double>(model_parameters(hf.model, 1)) / 1e9, 30.5, 0.01 * 30.5);
  ASSERT_EQ(hf.notes.size(), 1U) << "the query/key norms only";
}

// openai/gpt-oss-120b config.json (tests/data/hf): 36 layers, 64 heads of head_dim 64 over hidden 2880, 8 K/V
// heads, attention biases, 128 experts of 2880 top-4: the catalog's gpt-oss-120b (model card: 116.8B total, 5.1B
// active). Its 18 sliding-window layers (128 tokens, layer_types), attention sinks and router biases are notes.
TEST(HfConfig, ReadsGptOssAsTheCatalogsModelAndNotesWhatItApproximates)
{
  const HfModel hf = load_hf_config(data_dir + "gpt-oss-120b.json");
  const GptConfig& m = hf.model;
  EXPECT_EQ(m.head_size, 64);
  EXPECT_EQ(m.kv_heads(), 8);
  EXPECT_TRUE(m.bias);
  EXPECT_EQ(m.moe.experts, 128);
  EXPECT_EQ(m.moe.topk, 4);
  EXPECT_EQ(m.moe.expert_ffn_hidden, 2880);
  EXPECT_EQ(m.seq_len, 131072);
  expect_catalog_model(m, "gpt-oss-120b");
  ASSERT_EQ(hf.notes.size(), 2U);
  EXPECT_NE(hf.notes[0].find("sliding_window 128 on 18 of 36 layers (layer_types): modelled as full causal"),
            std::string::npos)
      << hf.notes[0];
  EXPECT_NE(hf.notes[1].find("attention sinks (num_attention_heads = 64 parameters a layer)"), std::string::npos)
      << hf.notes[1];

  // A layer_types list of another length, or with another kind, names the field.
  const std::string path = test_temp_path("gpt-oss-bad.json");
  std::ofstream(path) << R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 2880, "head_dim": 64,
    "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 2, "intermediate_size": 2880,
    "vocab_size": 201088, "max_position_embeddings": 4096, "num_local_experts": 8, "num_experts_per_tok": 2,
    "sliding_window": 128, "layer_types": ["sliding_attention", "chunked_attention"]})";
  EXPECT_NE(error_of(path).find(":4:65: layer_types: expected sliding_attention or full_attention, got "
                                "'chunked_attention'"),
            std::string::npos)
      << error_of(path);
  std::ofstream(path) << R"({"architectures": ["GptOssForCausalLM"], "hidden_size": 2880, "head_dim": 64,
    "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 2, "intermediate_size": 2880,
    "vocab_size": 201088, "max_position_embeddings": 4096, "num_local_experts": 8, "num_experts_per_tok": 9})";
  EXPECT_NE(error_of(path).find("num_experts_per_tok: 9 exceeds num_local_experts 8"), std::string::npos)
      << error_of(path);
}

// Qwen/Qwen3-235B-A22B config.json (tests/data/hf): 94 layers, 64 heads of head_dim 128 over hidden 4096 (queries
// 8192 wide: head_size 128), 4 K/V heads, 128 experts of 1536 top-8. The model card (huggingface.co/Qwen/
// Qwen3-235B-A22B): 235B total, 22B activated (rounded to whole billions: held to 1%); the same model as the
// catalog's qwen3-235b-a22b.
TEST(HfConfig, ReadsQwenThreeMoeWithItsHeadDim)
{
  const HfModel hf = load_hf_config(data_dir + "qwen3-235b-a22b.json");
  const GptConfig& m = hf.model;
  EXPECT_EQ(m.head_size, 128);
  EXPECT_EQ(m.head_dim(), 128);
  EXPECT_EQ(m.attention_width(), 8192);
  EXPECT_EQ(m.kv_heads(), 4);
  EXPECT_EQ(m.layers, 94);
  EXPECT_EQ(m.moe.experts, 128);
  EXPECT_EQ(m.moe.topk, 8);
  EXPECT_EQ(m.moe.expert_ffn_hidden, 1536);
  EXPECT_NO_THROW(validate_model(m));
  EXPECT_NEAR(static_cast<double>(model_parameters(m, 1)) / 1e9, 235.0, 0.005 * 235.0);
  EXPECT_NEAR(static_cast<double>(activated_parameters(m, 1)) / 1e9, 22.0, 0.01 * 22.0);
  expect_catalog_model(m, "qwen3-235b-a22b");
  ASSERT_EQ(hf.notes.size(), 1U);
  EXPECT_NE(hf.notes[0].find("query/key norms (2 x head_dim = 256"), std::string::npos) << hf.notes[0];
}

// deepseek-ai/DeepSeek-V3 config.json (tests/data/hf): MLA, 256 routed experts top-8 and a shared one, the first 3
// layers dense, one MTP module. arXiv:2412.19437 (and the model card): 671B total (the 14B MTP module besides), 37B
// activated (held to 2%, as tests/models/moe_model_test.cpp does); the same count as the catalog's deepseek-v3.
TEST(HfConfig, ReadsDeepSeekV3)
{
  const HfModel hf = load_hf_config(data_dir + "deepseek-v3.json");
  const GptConfig& m = hf.model;
  EXPECT_EQ(m.mla.kv_lora_rank, 512);
  EXPECT_EQ(m.mla.q_lora_rank, 1536);
  EXPECT_EQ(m.moe.experts, 256);
  EXPECT_EQ(m.moe.shared_experts, 1);
  EXPECT_EQ(m.moe.dense_first_layers, 3);
  EXPECT_EQ(m.moe.mtp_layers, 1);
  EXPECT_EQ(m.moe.router, RouterScore::Sigmoid);
  EXPECT_EQ(m.head_size, 0);
  EXPECT_NO_THROW(validate_model(m));
  EXPECT_NEAR(static_cast<double>(model_parameters(m, 1)) / 1e9, 671.0, 0.005 * 671.0);
  EXPECT_NEAR(static_cast<double>(activated_parameters(m, 1)) / 1e9, 37.0, 0.02 * 37.0);
  expect_catalog_model(m, "deepseek-v3");
}

// A MoE architecture missing its expert count names the field.
TEST(HfConfig, MixtureOfExpertsErrorsNameTheExpertField)
{
  const std::pair<const char*, const char*> moe[] = {{"DeepseekV3ForCausalLM", "n_routed_experts"},
                                                     {"GptOssForCausalLM", "missing field 'num_local_experts'"},
                                                     {"MixtralForCausalLM", "missing field 'num_local_experts'"},
                                                     {"Qwen3MoeForCausalLM", "missing field 'num_experts'"}};
  for (const auto& [architecture, field] : moe) {
    const std::string path = test_temp_path(std::string(architecture) + ".json");
    std::ofstream(path) << "{\"architectures\": [\"" << architecture << "\"], \"hidden_size\": 64, "
                        << "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"intermediate_size\": 128, "
                        << "\"vocab_size\": 100, \"max_position_embeddings\": 64, \"kv_lora_rank\": 16, "
                        << "\"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 8, "
                        << "\"num_local_experts_x\": 1}";
    EXPECT_NE(error_of(path).find(field), std::string::npos) << error_of(path);
  }
}

TEST(HfConfig, UnknownArchitectureListsTheSupportedOnes)
{
  const std::string path = test_temp_path("gpt2.json");
  std::ofstream(path) << R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 768})";
  const std::string e = error_of(path);
  EXPECT_NE(e.find(path + ":1:20: architectures: 'GPT2LMHeadModel' is not supported"), std::string::npos) << e;
  EXPECT_NE(e.find(supported_hf_architectures()), std::string::npos) << e;
  EXPECT_NE(supported_hf_architectures().find("Qwen3ForCausalLM"), std::string::npos);
  EXPECT_NE(supported_hf_architectures().find("DeepseekV3ForCausalLM"), std::string::npos);
  for (const char* moe : {"MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "GptOssForCausalLM"})
    EXPECT_NE(supported_hf_architectures().find(moe), std::string::npos) << moe;

  std::ofstream(path) << R"({"hidden_size": 768})";
  EXPECT_NE(error_of(path).find("missing field 'architectures'"), std::string::npos) << error_of(path);
  std::ofstream(path) << R"({"architectures": "LlamaForCausalLM"})";
  EXPECT_NE(error_of(path).find("architectures: expected a list"), std::string::npos) << error_of(path);
}

TEST(HfConfig, WrongTypesAndMissingFieldsNameTheField)
{
  EXPECT_NE(error_of(llama_with("hidden_size", "\"4096\"")).find("hidden_size: expected a positive integer, got the string"),
            std::string::npos);
  EXPECT_NE(error_of(llama_with("num_hidden_layers", "32.5")).find("num_hidden_layers: expected a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of(llama_with("tie_word_embeddings", "\"false\"")).find("tie_word_embeddings: expected true or false"),
            std::string::npos);
  EXPECT_NE(error_of(llama_with("attention_bias", "0")).find("attention_bias: expected true or false"),
            std::string::npos);
  EXPECT_NE(error_of(llama_with("hidden_act", "[\"silu\"]")).find("hidden_act: expected a string"),
            std::string::npos);

  const std::string path = test_temp_path("missing.json");
  std::ofstream(path) << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_attention_heads": 32})";
  EXPECT_NE(error_of(path).find("missing field 'num_hidden_layers'"), std::string::npos) << error_of(path);
  EXPECT_NE(error_of(test_temp_path("absent.json")).find("cannot open the file"), std::string::npos);
  std::ofstream(path) << "{\"architectures\": [\"LlamaForCausalLM\",";
  EXPECT_NE(error_of(path).find("malformed"), std::string::npos) << error_of(path);
}

TEST(HfConfig, RefusesWhatTheModelCannotExpress)
{
  // A head_dim other than hidden_size / num_attention_heads is the head size (Qwen3-0.6B: 16 heads of 128 over
  // hidden 1024); the default one leaves it unset; an odd one is refused, naming head_dim.
  EXPECT_EQ(load_hf_config(llama_with("head_dim", "256")).model.head_size, 256);
  EXPECT_EQ(load_hf_config(llama_with("head_dim", "256")).model.attention_width(), 32 * 256);
  EXPECT_EQ(load_hf_config(llama_with("head_dim", "128")).model.head_size, 0) << "the default head size";
  const std::string odd = error_of(llama_with("head_dim", "65"));
  EXPECT_NE(odd.find("head_dim: the head size 65 is odd"), std::string::npos) << odd;
  const std::string indivisible = error_of(llama_with("num_attention_heads", "30"));
  EXPECT_NE(indivisible.find("num_attention_heads: 30 does not divide hidden_size 4096"), std::string::npos)
      << indivisible;
  EXPECT_EQ(load_hf_config(llama_with({{"num_attention_heads", "30"}, {"num_key_value_heads", "10"},
                                       {"head_dim", "128"}}))
                .model.attention_width(),
            3840)
      << "hidden 4096 need not divide into the heads when head_dim is given";
  EXPECT_NE(error_of(llama_with("attention_bias", "true")).find("attention_bias: true with mlp_bias false"),
            std::string::npos);
  EXPECT_NE(error_of(llama_with("mlp_bias", "true")).find("mlp_bias: true with attention_bias false"),
            std::string::npos);
  EXPECT_TRUE(load_hf_config(llama_with({{"attention_bias", "true"}, {"mlp_bias", "true"}})).model.bias);
  EXPECT_NE(error_of(llama_with("attention_dropout", "0.1")).find("attention_dropout: 0.1"), std::string::npos);
  EXPECT_NE(error_of(llama_with("attention_dropout", "2")).find("attention_dropout: expected a number from 0 to 1"),
            std::string::npos);
  EXPECT_NE(error_of(llama_with("hidden_act", "\"gelu\"")).find("hidden_act: expected silu"), std::string::npos);
  EXPECT_NE(error_of(llama_with("num_key_value_heads", "5")).find("num_key_value_heads: 5 does not divide"),
            std::string::npos);

  const std::string qwen3 = test_temp_path("qwen3-bias.json");
  std::ofstream(qwen3) << R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": true, "hidden_size": 4096,
    "intermediate_size": 12288, "max_position_embeddings": 40960, "num_attention_heads": 32, "num_hidden_layers": 36,
    "vocab_size": 151936})";
  EXPECT_NE(error_of(qwen3).find("attention_bias: true with the MLP's biases"), std::string::npos) << error_of(qwen3);
}

TEST(HfConfig, NullIsAnAbsentField)
{
  // transformers writes unset optional fields as null: K/V heads default to the heads (multi-head attention).
  const std::string path = test_temp_path("null.json");
  std::ofstream(path) << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
    "max_position_embeddings": 4096, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": null,
    "head_dim": null, "rope_scaling": null, "vocab_size": 32000})";
  const GptConfig m = load_hf_config(path).model;
  EXPECT_EQ(m.kv_heads(), 32);
  EXPECT_EQ(m.head_dim(), 128);
  EXPECT_FALSE(m.tie_embeddings) << "LlamaConfig's default";
}

} // namespace
} // namespace gputwin::config
