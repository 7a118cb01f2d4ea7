#include "gputwin/engine/model/gpt_stage.hpp"

#include "gputwin/models/pipeline_schedule.hpp"

namespace gputwin::engine {

GptStage::GptStage(RankContext& ctx, ParameterStore& store) : stage_(ctx.coords.pp), pp_(ctx.plan.pp)
{
  const int64_t chunks = pipeline_shape(ctx.plan).chunks;
  virtual_stages_ = pp_ * chunks;
  // The generator's layer assignment (models/workload.cpp): parallel_plan's layers of each (stage, chunk).
  if (stage_ == 0)
    embedding_ = std::make_unique<GptEmbedding>(ctx, store);
  chunks_.resize(static_cast<size_t>(chunks));
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t first = chunk_first_layer(ctx.model, ctx.plan, stage_, c);
    for (int64_t l = 0; l < chunk_layers(ctx.model, ctx.plan, stage_, c); ++l)
      chunks_[static_cast<size_t>(c)].emplace_back(ctx, store, first + l);
  }
  if (stage_ == pp_ - 1) {
    // Tied: with one stage the output layer reads the embedding's own table; otherwise the last stage holds a
    // copy. Untied: the output layer's own matrix, on every plan.
    Parameter& weight = !ctx.model.tie_embeddings ? store.add(ctx, output_weight_spec(ctx))
                        : embedding_             ? embedding_->word()
                                                 : store.add(ctx, word_embedding_spec(ctx));
    output_ = std::make_unique<GptOutput>(ctx, store, weight);
  }
}

} // namespace gputwin::engine
