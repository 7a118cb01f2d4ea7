#pragma once
// The part of the GPT one rank holds: for each of its model chunks the transformer layers of virtual stage
// chunk x p + stage (Narayanan et al. 2021's interleaved assignment; one chunk unless interleaved), plus the
// embedding on the first stage and the output layer and loss on the last.

#include "gputwin/engine/model/gpt_edges.hpp"
#include "gputwin/engine/model/transformer_layer.hpp"

#include <deque>
#include <memory>
#include <vector>

namespace gputwin::engine {

class GptStage {
public:
  GptStage(RankContext& ctx, ParameterStore& store);

  int64_t stage() const { return stage_; }
  int64_t chunks() const { return static_cast<int64_t>(chunks_.size()); }
  int64_t virtual_stages() const { return virtual_stages_; } // p x chunks
  int64_t virtual_stage(int64_t chunk) const { return chunk * pp_ + stage_; }
  std::deque<TransformerLayer>& layers(int64_t chunk) { return chunks_[static_cast<size_t>(chunk)]; }
  GptEmbedding* embedding() { return embedding_.get(); } // first stage only
  GptOutput* output() { return output_.get(); }          // last stage only

private:
  int64_t stage_, pp_, virtual_stages_;
  std::vector<std::deque<TransformerLayer>> chunks_;
  std::unique_ptr<GptEmbedding> embedding_;
  std::unique_ptr<GptOutput> output_;
};

} // namespace gputwin::engine
