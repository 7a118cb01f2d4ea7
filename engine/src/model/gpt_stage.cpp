#include "gputwin/engine/model/gpt_stage.hpp"

#include "gputwin/models/pipeline_schedule.hpp"

namespace gputwin::engine {

GptStage::GptStage(RankContext& ctx, ParameterStore& store) : stage_(ctx.coords.pp), pp_(ctx.plan.pp)
{
  const int64_t chunks = pipeline_shape(ctx.plan).chunks;
  virtual_stages_ = pp_ * chunks;
  const int64_t layers_per_chunk = ctx.model.layers / virtual_stages_;
  if (stage_ == 0)
    embedding_ = std::make_unique<GptEmbedding>(ctx, store);
  chunks_.resize(static_cast<size_t>(chunks));
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t l = 0; l < layers_per_chunk; ++l)
      chunks_[static_cast<size_t>(c)].emplace_back(ctx, store, virtual_stage(c) * layers_per_chunk + l);
  if (stage_ == pp_ - 1) {
    // With one stage the output layer reads the embedding's own table; otherwise the last stage holds a copy.
    Parameter& word = embedding_ ? embedding_->word()
                                 : store.add(ctx, word_embedding_spec(ctx));
    output_ = std::make_unique<GptOutput>(ctx, store, word);
  }
}

} // namespace gputwin::engine
