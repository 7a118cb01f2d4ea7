// Nemotron-4 in the catalogue: the published shapes and parameter counts, and the squared-ReLU MLP through the
// parameter counts, the op vocabulary, the layer ops, the kernel classes and the plan metadata.
#include "gputwin/models/kernel_class.hpp"
#include "gputwin/models/layer_ops.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gputwin {
namespace {

const GptConfig& nemotron(const char* name)
{
  const CatalogEntry* e = find_catalog_model(name);
  EXPECT_NE(e, nullptr) << name;
  return e->model;
}

// Parmar et al. 2024 (arXiv 2402.16819), Table 1: Nemotron-4 15B has 3.2 B embedding and 12.5 B non-embedding
// parameters (2 x 256000 x 6144 = 3.146 B embedding: the published figure rounds generously, hence 0.06 B).
// NVIDIA 2024 (arXiv 2406.11704), Section 2.1: Nemotron-4 340B has 9.4 B embedding and 331.6 B non-embedding
// parameters, 341 B in all.
TEST(NemotronCatalog, ParameterCountsAreThePublishedOnes)
{
  struct Row {
    const char* name;
    double embedding, non_embedding, tolerance;
  };
  for (const Row& row : {Row{"nemotron4-15b", 3.2e9, 12.5e9, 0.06e9}, Row{"nemotron4-340b", 9.4e9, 331.6e9, 0.1e9}}) {
    const GptConfig& m = nemotron(row.name);
    const double total = static_cast<double>(model_parameters(m, 1));
    const double embedding = 2.0 * static_cast<double>(m.vocab * m.hidden); // untied: input and output tables
    EXPECT_NEAR(embedding, row.embedding, row.tolerance) << row.name;
    EXPECT_NEAR(total - embedding, row.non_embedding, row.tolerance) << row.name;
  }
  EXPECT_NEAR(static_cast<double>(model_parameters(nemotron("nemotron4-340b"), 8)), 341e9, 0.5e9);
}

TEST(NemotronCatalog, ShapesAreThePublishedOnes)
{
  const GptConfig& small = nemotron("nemotron4-15b");
  EXPECT_EQ(small.layers, 32);
  EXPECT_EQ(small.hidden, 6144);
  EXPECT_EQ(small.heads, 48);
  EXPECT_EQ(small.ffn(), 24576);
  const GptConfig& large = nemotron("nemotron4-340b");
  EXPECT_EQ(large.layers, 96);
  EXPECT_EQ(large.hidden, 18432);
  EXPECT_EQ(large.heads, 96);
  EXPECT_EQ(large.ffn(), 73728);
  for (const GptConfig* m : {&small, &large}) {
    EXPECT_EQ(m->kv_heads(), 8);
    EXPECT_EQ(m->seq_len, 4096);
    EXPECT_EQ(m->vocab, 256000);
    EXPECT_EQ(m->activation, Activation::SquaredRelu);
    EXPECT_EQ(m->norm, Norm::LayerNorm); // NeMo's layernorm1p: LayerNorm with zero-centered gamma
    EXPECT_EQ(m->position, PositionEmbedding::Rope);
    EXPECT_FALSE(m->tie_embeddings);
    EXPECT_FALSE(m->bias);
    EXPECT_FALSE(m->dropout);
    EXPECT_EQ(m->fc1_width(), m->ffn()); // not gated: fc1 is F wide
  }
  // The catalogue's plans run: 340B's NeMo recipe interleaves 12 virtual stages of one layer each over PP 8.
  const CatalogEntry& e = *find_catalog_model("nemotron4-340b");
  validate_plan(e.model, e.paper_plan);
  EXPECT_EQ(chunk_layers(e.model, e.paper_plan, 3, 7), 1);
  validate_plan(small, find_catalog_model("nemotron4-15b")->paper_plan);
}

TEST(NemotronCatalog, SquaredReluIsOneKernelEachWay)
{
  GptConfig m = nemotron("nemotron4-15b");
  m.layers = 1;
  ParallelPlan p;
  p.tp = 4;
  p.tp_comm = TpComm::SequenceParallel;
  p.attention = AttentionKernel::Flash;
  const traces::RankProgram program = stage_program(make_workload(m, p), 0);
  std::multiset<std::string> names;
  for (const traces::Op& op : program.ops)
    names.insert(op.name);
  EXPECT_EQ(names.count("squared_relu.fwd"), 1u);
  EXPECT_EQ(names.count("squared_relu.bwd"), 1u);
  EXPECT_EQ(names.count("gelu.fwd") + names.count("swiglu.fwd") + names.count("gelu.bwd"), 0u);
  EXPECT_EQ(activation_forward_op(Activation::SquaredRelu), OpName::SquaredReluFwd);
  EXPECT_EQ(activation_backward_op(Activation::SquaredRelu), OpName::SquaredReluBwd);
  EXPECT_EQ(parse_op_name("squared_relu.bwd"), OpName::SquaredReluBwd);

  // Elementwise over the rank's s b F / t: bf16 in and out forward; input, output gradient in, input gradient out.
  const LayerShape s = layer_shape(m, p);
  const double elements = 4096.0 * 24576 / 4;
  EXPECT_DOUBLE_EQ(op_cost(OpName::SquaredReluFwd, s).bytes, 4 * elements);
  EXPECT_DOUBLE_EQ(op_cost(OpName::SquaredReluBwd, s).bytes, 6 * elements);
  EXPECT_DOUBLE_EQ(op_cost(OpName::SquaredReluFwd, s).flops, 2 * elements);
  EXPECT_EQ(op_cost(OpName::SquaredReluFwd, s).gemm.m, 0);
  // Timed in the activation class (TE's srelu / dsrelu kernels).
  EXPECT_EQ(classify_kernel("squared_relu.fwd", false), KernelClass::Gelu);
  EXPECT_EQ(classify_kernel("transformer_engine::srelu_kernel", false), KernelClass::Gelu);
  // The same parameters as a GeLU MLP of width F.
  GptConfig gelu = m;
  gelu.activation = Activation::Gelu;
  EXPECT_EQ(layer_parameters(m), layer_parameters(gelu));
}

TEST(NemotronCatalog, PlanMetadataCarriesTheActivation)
{
  const GptConfig& m = nemotron("nemotron4-15b");
  ParallelPlan p;
  p.tp = 4;
  Metadata metadata;
  write_plan_metadata(m, p, metadata);
  EXPECT_EQ(metadata.at("activation"), "squared-relu");
  EXPECT_EQ(read_plan_metadata(metadata, "test").model.activation, Activation::SquaredRelu);
  EXPECT_EQ(parse_activation("squared-relu"), Activation::SquaredRelu);
  EXPECT_EQ(to_string(Activation::SquaredRelu), "squared-relu");
}

} // namespace
} // namespace gputwin
