#pragma once
// Everything one rank's code needs: the model and plan, its place on the grid, the backend, the memory
// accountant, the tracer and its communicators, plus the per-rank sizes every layer uses.

#include "gputwin/engine/backend/backend.hpp"
#include "gputwin/engine/comm/communicator.hpp"
#include "gputwin/engine/parallel/rank_grid.hpp"
#include "gputwin/engine/parallel/traced_comm.hpp"
#include "gputwin/engine/trace/tracer.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/layer_shape.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <memory>
#include <string>

namespace gputwin::engine {

struct EngineOptions {
  uint64_t seed = 1234; // initialisation, data order and dropout keys
  float dropout = 0.1f; // probability of every dropout of the model
  float layernorm_epsilon = 1e-5f;
  float init_std = 0.02f; // normal initialisation of weights (GPT-2); output projections / sqrt(2L)
  AdamHyper adam;
};

class RankContext {
public:
  RankContext(const GptConfig& model, const ParallelPlan& plan, const EngineOptions& options, const RankGrid& grid,
              int world_rank, Backend& backend, MemoryAccountant& memory, Tracer& tracer);

  const GptConfig& model;
  const ParallelPlan& plan;
  const EngineOptions& options;
  const RankGrid& grid;
  const int world_rank;
  const RankCoords coords;
  Backend& backend;
  MemoryAccountant& memory;
  Tracer& tracer;

  TracedComm tp;                       // tensor-parallel group (stream TensorParallel)
  TracedComm dp;                       // data-parallel group (stream DataParallel)
  TracedComm embedding;                // first and last stage, tied word embedding (stream DataParallel)
  TracedComm ep;                       // mixture of experts: the expert-parallel group (token all-to-alls, stream
                                       // Compute as the workload generator places them)
  TracedComm edp;                      // ... the expert data-parallel group (expert gradients, stream DataParallel)
  std::unique_ptr<Communicator> world; // point-to-point between pipeline stages

  int64_t iteration = 0; // counts from 0; part of every dropout key

  // Sizes: the per-rank shape the workload generator sizes its ops by (models/layer_shape.hpp), plus this
  // rank's place in the sequence, head and vocabulary splits.
  const LayerShape shape;
  int64_t seq() const { return shape.s; }
  int64_t batch() const { return shape.b; }
  int64_t hidden() const { return shape.h; }
  int64_t tp_size() const { return shape.t; }
  bool sequence_parallel() const { return shape.sp; }
  int64_t seq_local() const { return shape.seq_outside_tp(); } // rows of the residual stream per sample
  int64_t seq_offset() const { return sequence_parallel() ? coords.tp * seq_local() : 0; }
  int64_t rows_full() const { return shape.tokens(); }          // tokens of a micro-batch
  int64_t rows_local() const { return shape.tokens_outside_tp(); } // tokens of the residual stream on this rank
  int64_t heads_local() const { return shape.heads_per_rank(); }
  int64_t head_offset() const { return coords.tp * heads_local(); }
  int64_t hidden_local() const { return shape.hidden_per_rank(); } // h / t: attention width of this rank
  int64_t ffn_local() const { return shape.ffn_per_rank(); }
  // Rows of the embedding shard: the vocabulary padded to a multiple of 128 t as Megatron-LM pads it.
  int64_t vocab_local() const { return shape.vocab_per_rank; }
  int64_t vocab_start() const { return coords.tp * vocab_local(); }
  int64_t vocab_owned() const; // rows of the shard that are real tokens (the rest pads v to a multiple of t)
  // Index of the first sample of micro-batch `micro_batch` of this rank's replica in the iteration's global
  // batch, counted over the whole run (dropout keys and data use it, so they do not depend on dp or b).
  int64_t sample_base(int64_t micro_batch) const;
  // The same index within the iteration's global batch, 0 .. B-1.
  int64_t sample_in_iteration(int64_t micro_batch) const;

  Tensor tensor(MemoryPurpose purpose, DType dtype, std::vector<int64_t> dims)
  {
    return Tensor(memory, purpose, dtype, std::move(dims), backend.allocator()); // on the backend's device
  }

  // Runs `fn` as one traced compute op, timed by the tracer's clock on the compute stream (the backend's
  // op_clock(): CUDA events, so the host never waits for the op), inside a profiler range of the same name.
  template <typename Fn>
  void compute(const std::string& name, double flops, double bytes, traces::GemmShape gemm, Fn&& fn)
  {
    traces::Op op;
    op.kind = traces::OpKind::Compute;
    op.name = name;
    op.stream = static_cast<int32_t>(TraceStream::Compute);
    op.flops = flops;
    op.bytes = bytes;
    op.gemm = gemm;
    const BackendRange range(backend, op.name);
    TraceScope scope(tracer, std::move(op));
    fn();
  }
  // An op of the vocabulary (models/op_vocabulary.hpp) at the cost the workload generator gives it.
  template <typename Fn>
  void compute(OpName name, const OpCost& cost, Fn&& fn)
  {
    compute(op_name(name), cost.flops, cost.bytes, cost.gemm, std::forward<Fn>(fn));
  }
  template <typename Fn>
  void compute(OpName name, Fn&& fn)
  {
    compute(name, op_cost(name, shape), std::forward<Fn>(fn));
  }
  template <typename Fn>
  void compute(const std::string& name, double bytes, Fn&& fn)
  {
    compute(name, 0.0, bytes, traces::GemmShape{}, std::forward<Fn>(fn));
  }

  void set_context(traces::Phase phase, int32_t layer, int32_t micro_batch, int32_t chunk)
  {
    tracer.set_context(OpContext{phase, layer, micro_batch, chunk});
  }
};

} // namespace gputwin::engine
