#pragma once
// Runs one rank's share of a training iteration: the forward and backward steps of its pipeline stage in
// exactly the order models/pipeline_schedule.hpp emits (GPipe, 1F1B or interleaved 1F1B), with the
// activations and their gradients sent between virtual stages point to point: in place where the world
// communicator's messages reach the tensors' memory (host tensors; device tensors over NCCL), else staged
// through host memory (device tensors with the in-process communicator).

#include "gputwin/engine/model/gpt_stage.hpp"
#include "gputwin/engine/train/synthetic_corpus.hpp"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace gputwin::engine {

// The bytes one layer's forward left saved for backward (LayerActivations), over every layer forward seen.
struct SavedBytesPerLayer {
  int64_t min = -1, max = -1;
  void add(int64_t bytes);
};

class PipelineDriver {
public:
  PipelineDriver(RankContext& ctx, GptStage& stage, const SyntheticCorpus& corpus);

  // Every step of this stage for iteration ctx.iteration; returns the sum over micro-batches of the mean
  // micro-batch loss on the last stage (0 on the others). Gradients accumulate in the parameter store, scaled
  // so that their sum over micro-batches and replicas is the gradient of the iteration's mean loss.
  double run_iteration();

  const SavedBytesPerLayer& saved_bytes_per_layer() const { return saved_per_layer_; }

private:
  struct InFlight { // what one (micro-batch, chunk) keeps between its forward and its backward
    std::vector<LayerActivations> layers;
    EmbeddingSaved embedding;
    OutputSaved output;
  };

  void forward_step(int64_t micro_batch, int64_t chunk);
  void backward_step(int64_t micro_batch, int64_t chunk);
  Tensor tokens(int64_t micro_batch, int64_t shift); // (s, b) i32; shift 1 = the next-token targets
  int peer_rank(int64_t virtual_stage) const;
  void send(const Tensor& t, int64_t to_virtual_stage, int64_t micro_batch, bool gradient);
  Tensor recv(DType dtype, int64_t from_virtual_stage, int64_t micro_batch, bool gradient);

  RankContext& ctx_;
  GptStage& stage_;
  const SyntheticCorpus& corpus_;
  std::map<std::pair<int64_t, int64_t>, InFlight> in_flight_;
  double loss_sum_ = 0;
  SavedBytesPerLayer saved_per_layer_;
};

} // namespace gputwin::engine
