// The grid checks: model sizes come from the named or inline config, never from data.
#include "train/model_parallel_check.hpp"

#include <numeric>

#include "core/check.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/resnet/resnet_config.hpp"
#include "train/training_task.hpp"

namespace sb::train {

std::int64_t pipeline_units_of(const TrainConfig& c) {
  if (trains_resnet(c)) {
    const resnet::ResnetConfig r = resnet::resnet_config_by_name(c.model.name);
    return 2 + std::accumulate(r.stage_blocks.begin(), r.stage_blocks.end(), std::int64_t{0});
  }
  return gpt_config_of(c).layers;
}

void check_model_parallel_grid(const TrainConfig& c) {
  const StrategySpec& s = c.strategy;
  if (trains_resnet(c)) {
    SB_USER_CHECK(s.tp == 1,
                  "{}: strategy.tp {} splits a GPT's attention heads and MLP; model {} trains with dp and pp "
                  "(use tp 1)",
                  c.source, s.tp, c.model.name);
  } else {
    const gpt::GptConfig g = gpt_config_of(c);
    SB_USER_CHECK(g.heads % s.tp == 0,
                  "{}: strategy.tp {} must divide the {} attention heads of model {} (each tensor-parallel rank "
                  "computes whole heads)",
                  c.source, s.tp, g.heads, g.name);
  }
  const std::int64_t units = pipeline_units_of(c);
  SB_USER_CHECK(s.pp <= units,
                "{}: strategy.pp {} asks for more pipeline stages than model {} has {} ({}); each stage needs at "
                "least one",
                c.source, s.pp, c.model.name, units, trains_resnet(c) ? "layers: stem, blocks and head" : "blocks");
  if (!s.stages.empty()) {
    SB_USER_CHECK(static_cast<std::int64_t>(s.stages.size()) == s.pp,
                  "{}: strategy.stages lists {} stages but strategy.pp is {}", c.source, s.stages.size(), s.pp);
    std::int64_t sum = 0;
    for (const std::int64_t n : s.stages) {
      SB_USER_CHECK(n >= 1, "{}: strategy.stages gives a stage {} layers; each stage needs at least one", c.source, n);
      sum += n;
    }
    SB_USER_CHECK(sum == units, "{}: strategy.stages adds up to {} but model {} has {} {}", c.source, sum,
                  c.model.name, units, trains_resnet(c) ? "layers (stem, blocks and head)" : "blocks");
  }
  micro_batch_of(c);  // the batch splits into whole micro-batches on every rank
  SB_USER_CHECK(s.interleave == 1,
                "{}: strategy.interleave {} (virtual pipeline stages) is modelled by predict and plan; the trainer "
                "runs interleave 1",
                c.source, s.interleave);
  SB_USER_CHECK(!s.sequence_parallel,
                "{}: strategy.sequence_parallel is modelled by predict and plan; the trainer runs without it",
                c.source);
}

}  // namespace sb::train
