// Model files: loading, and errors that name FILE:LINE:COLUMN and the field.
#include "gputwin/config/model_yaml.hpp"
#include "gputwin/common/input_error.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace gputwin::config {
namespace {

const std::string data_dir = GPUTWIN_TEST_DATA_DIR "/models/";

std::string error_of(const std::string& file)
{
  try {
    load_model_yaml(data_dir + file);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  return "";
}

TEST(ModelYaml, LoadsAllFields)
{
  const GptConfig m = load_model_yaml(data_dir + "gpt-13b.yaml");
  EXPECT_EQ(m.name, "gpt-13b");
  EXPECT_EQ(m.hidden, 5120);
  EXPECT_EQ(m.heads, 40);
  EXPECT_EQ(m.layers, 40);
  EXPECT_EQ(m.seq_len, 2048);
  EXPECT_EQ(m.vocab, 51200);
}

TEST(ModelYaml, NameDefaultsToTheFileStem)
{
  const std::string path = ::testing::TempDir() + "/my-model.yaml";
  {
    std::ofstream out(path);
    out << "hidden: 64\nheads: 4\nlayers: 2\nseq_len: 16\nvocab: 100\n";
  }
  EXPECT_EQ(load_model_yaml(path).name, "my-model");
}

// Nemotron-4 15B as a model file: the squared-ReLU activation by its spelling; a misspelt one names the field.
TEST(ModelYaml, ReadsTheSquaredReluActivation)
{
  const std::string path = ::testing::TempDir() + "/nemotron-like.yaml";
  {
    std::ofstream out(path);
    out << "hidden: 6144\nheads: 48\nlayers: 32\nseq_len: 4096\nvocab: 256000\nnum_query_groups: 8\n"
           "ffn_hidden: 24576\nactivation: squared-relu\nposition: rope\nbias: false\n";
  }
  EXPECT_EQ(load_model_yaml(path).activation, Activation::SquaredRelu);
  {
    std::ofstream out(path);
    out << "hidden: 64\nheads: 4\nlayers: 2\nseq_len: 16\nvocab: 100\nactivation: relu2\n";
  }
  try {
    load_model_yaml(path);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":6:13: activation: expected gelu|swiglu|squared-relu, got 'relu2'"),
              std::string::npos)
        << e.what();
  }
}

// Qwen3-235B-A22B's attention as a model file: 64 heads of head_size 128 over hidden 4096 (queries 8192 wide); a
// hidden size the heads do not divide is accepted with a head size. A bad head_size names FILE:LINE:COLUMN.
TEST(ModelYaml, ReadsTheHeadSize)
{
  const std::string path = ::testing::TempDir() + "/qwen3-like.yaml";
  {
    std::ofstream out(path);
    out << "hidden: 4096\nheads: 64\nlayers: 2\nseq_len: 16\nvocab: 100\nnum_query_groups: 4\nhead_size: 128\n"
           "position: rope\n";
  }
  const GptConfig m = load_model_yaml(path);
  EXPECT_EQ(m.head_size, 128);
  EXPECT_EQ(m.attention_width(), 8192);
  {
    std::ofstream out(path); // gpt-oss-120b: 64 heads of 64 over hidden 2880 (2880 / 64 = 45)
    out << "hidden: 2880\nheads: 64\nlayers: 2\nseq_len: 16\nvocab: 100\nhead_size: 64\n";
  }
  EXPECT_EQ(load_model_yaml(path).attention_width(), 4096);
  const std::pair<const char*, const char*> bad[] = {
      {"head_size: 0\n", ":6:12: head_size: expected a positive integer"},
      {"head_size: wide\n", ":6:12: head_size: expected a positive integer"},
      {"head_size: 65\nposition: rope\n", ":6:12: head_size: 65 is odd"},
  };
  for (const auto& [field, expected] : bad) {
    {
      std::ofstream out(path);
      out << "hidden: 2880\nheads: 64\nlayers: 2\nseq_len: 16\nvocab: 100\n" << field;
    }
    try {
      load_model_yaml(path);
      ADD_FAILURE() << "expected an InputError for " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path + expected), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(ModelYaml, ErrorsNameFileLineAndField)
{
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"missing-seq-len.yaml", "missing-seq-len.yaml:1:1: missing field 'seq_len' (expected a positive integer)"},
      {"mistyped-heads.yaml", "mistyped-heads.yaml:2:8: heads: expected a positive integer, got 'forty'"},
      {"negative-layers.yaml", "negative-layers.yaml:3:9: layers: expected a positive integer, got -4"},
      {"unknown-field.yaml", "unknown-field.yaml:6:1: hiden: unknown field (expected one of name, hidden"},
      {"malformed.yaml", "malformed.yaml:3:"},
      {"heads-not-dividing.yaml", "heads-not-dividing.yaml:2:8: heads: 48 does not divide hidden 5120"},
      {"not-a-mapping.yaml", "not-a-mapping.yaml:1: expected a mapping of fields"},
      {"no-such-file.yaml", "no-such-file.yaml: cannot open the file"},
  };
  for (const auto& [file, expected] : cases) {
    const std::string message = error_of(file);
    EXPECT_NE(message.find(expected), std::string::npos) << "got: " << message << "\nexpected: " << expected;
  }
  EXPECT_NE(error_of("malformed.yaml").find("malformed YAML"), std::string::npos);
}

} // namespace
} // namespace gputwin::config
