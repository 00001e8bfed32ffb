// The analytic step model of step_prediction.hpp. Every formula it applies lives in
// closed_forms.hpp or the model sources; this file decides which applies where (stages, link
// levels, overlap), how much memory traffic the non-GEMM work makes, and hands the per-op costs
// to the event simulation (step_simulation.hpp), whose step time it reports. Leaves out the
// interleaved schedule's extra activations and its simulation (its bubble is the closed form's).
#include "costmodel/step_prediction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <numeric>
#include <vector>

#include "core/balanced_partition.hpp"
#include "core/check.hpp"
#include "costmodel/closed_forms.hpp"
#include "costmodel/kernel_calls.hpp"
#include "costmodel/model_description.hpp"
#include "costmodel/step_simulation.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/gpt/gpt_partition.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_config.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "train/pipeline_schedule.hpp"
#include "train/training_task.hpp"

namespace sb::costmodel {

namespace {

using i64 = std::int64_t;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// What one rank of a pipeline stage holds and does for one micro-batch.
struct StageCost {
  double executed_flops = 0;     // forward + backward + recomputation, this rank's tp share
  double forward_flops = 0;      // the forward's part of executed_flops
  double elementwise_bytes = 0;  // memory traffic of the non-GEMM work, this rank
  double forward_elementwise_bytes = 0;  // the forward's part of elementwise_bytes
  double parameters = 0;         // this rank's share
  double activation_bytes = 0;   // kept for the backward, one micro-batch
  double boundary_bytes = 0;     // the p2p message to the next stage (and its gradient back)
  i64 tp_all_reduces = 0;        // per micro-batch
  i64 forward_tp_all_reduces = 0;  // the forward's part of tp_all_reduces
  i64 in_flight = 1;             // micro-batches whose activations are held at once
  std::size_t unit_begin = 0, unit_end = 0;  // its pipeline units [begin, end) of the description
  double shared_activation_bytes = 0;  // held once whatever the micro-batches in flight (scratch)
  double buffer_bytes = 0;             // model state beside the parameters (BatchNorm running statistics)
};

// Parameter, gradient and optimizer bytes per parameter: 16-bit weights, fp32 main gradients
// (the trainer, Megatron-LM) or 16-bit ones (precision.main_grads storage: ZeRO's 2, 2, K).
struct StateBytes {
  double param, grad, optimizer;
};
StateBytes state_bytes(const train::TrainConfig& c, double element_bytes) {
  const bool mixed = element_bytes < 4;
  const double master = mixed ? 4.0 : 0.0;  // fp32 master weights beside 16-bit ones
  const double moments = c.optimizer.type == "adamw" ? 8.0 : 4.0;  // m and v, or momentum
  const double grad = c.precision.main_grads == "storage" ? element_bytes : 4.0;
  return {element_bytes, grad, master + moments};
}

// Bytes the optimizer reads and writes per parameter: the gradient, each fp32 state read and
// written, and the 16-bit copy of the updated weight in mixed precision.
double optimizer_bytes_per_parameter(const train::TrainConfig& c, double element_bytes) {
  const StateBytes s = state_bytes(c, element_bytes);
  const double fp32_weights = element_bytes < 4 ? s.optimizer : s.optimizer + 4.0;
  return s.grad + 2.0 * fp32_weights + (element_bytes < 4 ? element_bytes : 0.0);
}

// Units per stage: strategy.stages, or the GPT's blocks split evenly (Megatron-LM), or the
// ResNet's units balanced by FLOPs (the trainer's rule).
std::vector<i64> stage_sizes(const train::TrainConfig& c, const ModelDescription& d, i64 stageable) {
  const auto& s = c.strategy;
  if (!s.stages.empty()) {
    const i64 total = std::accumulate(s.stages.begin(), s.stages.end(), i64{0});
    SB_USER_CHECK(static_cast<i64>(s.stages.size()) == s.pp && total == stageable &&
                      std::all_of(s.stages.begin(), s.stages.end(), [](i64 n) { return n >= 1; }),
                  "{}: 'strategy.stages' needs pp = {} positive entries summing to {} ({}), got [{}]",
                  c.source, s.pp, stageable, d.family == ModelFamily::gpt ? "the blocks" : "the layers",
                  fmt::join(s.stages, ", "));
    return s.stages;
  }
  if (d.family == ModelFamily::gpt) {
    std::vector<i64> sizes(static_cast<std::size_t>(s.pp), stageable / s.pp);
    for (i64 i = 0; i < stageable % s.pp; ++i) sizes[static_cast<std::size_t>(i)] += 1;
    return sizes;
  }
  std::vector<double> costs;
  for (const UnitCost& u : d.units) costs.push_back(u.forward_flops());
  return balanced_contiguous_partition(costs, static_cast<int>(s.pp));
}

// One micro-batch's activation bytes as this trainer lays them out and tracks them
// (models/gpt/gpt.hpp: the slot's tensors in the storage type, fp32 statistics, the tokens and
// targets): what `train` measures, and more than Korthikanti et al.'s count of what a
// Megatron layer must keep, so the prediction of a run this trainer makes is the run's memory.
double trainer_activation_bytes(const gpt::GptConfig& g, const ModelDescription& d, i64 tp, i64 block_begin,
                                i64 blocks, bool first, bool last) {
  gpt::GptPartition partition;
  partition.layer_begin = block_begin;
  partition.layer_end = block_begin + blocks;
  partition.embedding = first;
  partition.head = last;
  partition.tp.size = static_cast<int>(tp);
  const gpt::GptShard shard = gpt::gpt_shard_shape(g, partition);
  const i64 B = d.micro_batch, T = d.seq_len;
  const i64 tensors = d.element_bytes == 4.0 ? gpt::gpt_shard_activation_bytes<float>(shard, B, T).total
                                             : gpt::gpt_shard_activation_bytes<bf16>(shard, B, T).total;
  return static_cast<double>(tensors + 2 * B * T * static_cast<i64>(sizeof(std::int32_t)));
}

std::vector<StageCost> gpt_stages(const train::TrainConfig& c, const ModelDescription& d,
                                  Recompute recompute) {
  const auto& s = c.strategy;
  const gpt::GptConfig& g = d.gpt;
  const double t = static_cast<double>(s.tp), b = static_cast<double>(d.micro_batch);
  const double T = static_cast<double>(d.seq_len), C = static_cast<double>(g.channels);
  const double V = static_cast<double>(g.vocab);
  const std::vector<i64> sizes = stage_sizes(c, d, g.layers);
  const double block_forward = gpt::gpt_block_forward_flops(g, d.micro_batch, d.seq_len);
  const double block_recompute =
      recompute == Recompute::full ? block_forward
      : recompute == Recompute::selective ? gpt::gpt_block_attention_core_forward_flops(g, d.micro_batch, d.seq_len)
                                          : 0.0;
  const double a = static_cast<double>(g.heads), scale = d.element_bytes / 2.0;
  const double block_activations =
      activation_bytes_per_layer(T, b, C, a, t, s.sequence_parallel, recompute) * scale;
  // The non-GEMM work (LayerNorm, softmax, GELU, dropout, residuals) is bound by memory: its
  // forward writes the tensors Korthikanti et al. count, the backward reads them and writes
  // their gradients (3 passes), and each recomputed forward writes them again.
  const double written = activation_bytes_per_layer(T, b, C, a, t, s.sequence_parallel, Recompute::none) * scale;
  const double recomputed =
      recompute == Recompute::full ? written
      : recompute == Recompute::selective
          ? written - activation_bytes_per_layer(T, b, C, a, t, s.sequence_parallel, Recompute::selective) * scale
          : 0.0;
  const double block_traffic = 3.0 * written + recomputed;
  std::vector<StageCost> stages;
  i64 block_begin = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bool first = i == 0, last = i + 1 == sizes.size();
    const double blocks = static_cast<double>(sizes[i]);
    StageCost st;
    double forward = blocks * block_forward;
    st.parameters = blocks * static_cast<double>(gpt::gpt_block_parameter_count(g)) / t;
    st.activation_bytes = blocks * block_activations;
    st.elementwise_bytes = blocks * block_traffic;
    st.forward_elementwise_bytes = blocks * written;
    st.tp_all_reduces = sizes[i] * (recompute == Recompute::full ? 6 : 4);
    st.forward_tp_all_reduces = sizes[i] * 2;  // after attention and after the MLP
    if (first) {
      // wte vocabulary-parallel, wpe replicated; the embedding's output is all-reduced
      st.parameters += V * C / t + static_cast<double>(g.max_seq_len) * C;
      st.tp_all_reduces += 1;
      st.forward_tp_all_reduces += 1;
    }
    if (last) {
      forward += gpt::gpt_head_forward_flops(g, d.micro_batch, d.seq_len);
      st.parameters += static_cast<double>(gpt::gpt_final_layernorm_parameter_count(g));
      if (s.pp > 1) st.parameters += V * C / t;  // the tied wte's copy on the last stage
      st.activation_bytes += b * T * V * 4.0 / t;  // fp32 logits, vocabulary-parallel
      st.elementwise_bytes += 3.0 * b * T * V * 4.0 / t;  // softmax forward, its gradient
      st.forward_elementwise_bytes += b * T * V * 4.0 / t;
    }
    st.executed_flops = (3.0 * forward + blocks * block_recompute) / t;
    st.forward_flops = forward / t;  // recomputation runs inside the backward
    // Megatron-LM's scatter/gather: each tp rank sends its 1/t of the (b, s, C) boundary
    st.boundary_bytes = b * T * C * d.element_bytes / t;
    if (recompute == Recompute::none && !s.sequence_parallel)
      st.activation_bytes = trainer_activation_bytes(g, d, s.tp, block_begin, sizes[i], first, last);
    st.unit_begin = first ? 0 : static_cast<std::size_t>(1 + block_begin);
    st.unit_end = static_cast<std::size_t>(1 + block_begin + sizes[i] + (last ? 1 : 0));
    block_begin += sizes[i];
    stages.push_back(st);
  }
  return stages;
}

std::vector<StageCost> resnet_stages(const train::TrainConfig& c, const ModelDescription& d) {
  const std::vector<i64> sizes = stage_sizes(c, d, static_cast<i64>(d.units.size()));
  std::vector<StageCost> stages;
  std::size_t unit = 0;
  for (i64 size : sizes) {
    StageCost st;
    st.unit_begin = unit;
    st.unit_end = unit + static_cast<std::size_t>(size);
    double forward = 0;
    for (i64 k = 0; k < size; ++k, ++unit) {
      forward += d.units[unit].forward_flops();
      st.parameters += d.units[unit].parameters();
      st.activation_bytes += d.units[unit].activation_bytes();
      // BatchNorm, ReLU, pools, residual adds: forward write, backward read and gradient write
      st.elementwise_bytes += 3.0 * d.units[unit].activation_bytes();
      st.boundary_bytes = d.units[unit].output_bytes;
    }
    st.executed_flops = 3.0 * forward;
    st.forward_flops = forward;
    st.forward_elementwise_bytes = st.elementwise_bytes / 3.0;
    for (std::size_t u = st.unit_begin; u < st.unit_end; ++u)
      for (const LayerCost& layer : d.units[u].layers) st.buffer_bytes += layer.buffers * 4.0;  // fp32
    if (resnet_kernel_calls_known(d.resnet)) {
      // the trainer's layout (models/resnet/resnet.hpp): one slot's tensors in the storage type,
      // fp32 statistics, the labels; the shortcut scratch once
      const resnet::ResnetPartition part{static_cast<i64>(st.unit_begin),
                                         st.unit_end == d.units.size() ? resnet::kResnetAllUnits
                                                                       : static_cast<i64>(st.unit_end)};
      const auto bytes = [&](i64 slots) {
        return d.element_bytes == 4.0 ? resnet::resnet_activation_bytes<float>(d.resnet, d.micro_batch, part, slots)
                                      : resnet::resnet_activation_bytes<bf16>(d.resnet, d.micro_batch, part, slots);
      };
      const double slot = static_cast<double>(bytes(2) - bytes(1));
      st.activation_bytes = slot + static_cast<double>(d.micro_batch) * 4.0;
      st.shared_activation_bytes = static_cast<double>(bytes(1)) - slot;
    }
    stages.push_back(st);
  }
  return stages;
}

// One micro-batch's forward and backward seconds on one rank of a stage, and the optimizer's,
// from the site's kernel times: the sum of the kernel calls the trainer makes. Nothing when the
// site has no times for this precision and devices per rank, or a kernel was never timed, or
// the model is one whose calls are not written down (kernel_calls.hpp).
struct TimedStage {
  double forward_s = 0, backward_s = 0;
};
std::optional<std::vector<TimedStage>> timed_stages(const std::vector<StageCost>& stages, const ModelDescription& d,
                                                    const train::TrainConfig& c, const KernelProfile& times,
                                                    int devices, int ranks, Recompute recompute) {
  const std::string& precision = c.precision.dtype;
  if (!times.covers(precision, devices, ranks) || recompute != Recompute::none) return std::nullopt;
  if (d.family == ModelFamily::resnet && !resnet_kernel_calls_known(d.resnet)) return std::nullopt;
  const int element_bytes = static_cast<int>(d.element_bytes);
  std::vector<TimedStage> timed;
  for (const StageCost& st : stages) {
    TimedStage t;
    for (std::size_t u = st.unit_begin; u < st.unit_end; ++u) {
      KernelCalls calls;
      if (d.family == ModelFamily::resnet) {
        calls = resnet_unit_kernel_calls(d.resnet, u, d.micro_batch, element_bytes);
      } else {
        const GptUnitKind kind = u == 0 ? GptUnitKind::embedding
                                 : u + 1 == d.units.size() ? GptUnitKind::head
                                                           : GptUnitKind::block;
        calls = gpt_unit_kernel_calls(d.gpt, kind, c.strategy.tp, d.micro_batch, d.seq_len, element_bytes);
      }
      for (const auto& [list, sum] : {std::pair{&calls.forward, &t.forward_s}, std::pair{&calls.backward, &t.backward_s}})
        for (const KernelCall& call : *list) {
          const std::optional<double> seconds = times.seconds(call, precision, devices, ranks);
          if (!seconds) return std::nullopt;
          *sum += *seconds;
        }
    }
    timed.push_back(t);
  }
  return timed;
}

std::optional<double> timed_optimizer_seconds(const train::TrainConfig& c, double parameters, double owned,
                                              double element_bytes, const KernelProfile& times, int devices,
                                              int ranks) {
  double sum = 0;
  for (const KernelCall& call : optimizer_kernel_calls(c.optimizer.type, static_cast<i64>(parameters),
                                                       static_cast<i64>(owned), static_cast<int>(element_bytes))) {
    const std::optional<double> seconds = times.seconds(call, c.precision.dtype, devices, ranks);
    if (!seconds) return std::nullopt;
    sum += *seconds;
  }
  return sum;
}

// A group of n ranks whose members sit `stride` world ranks apart (tp 1, dp tp, pp tp·dp:
// the grid's order) stays inside a node when it spans at most devices_per_node ranks.
bool crosses_nodes(int stride, int n, int devices_per_node) {
  return static_cast<i64>(stride) * n > devices_per_node;
}

}  // namespace

Prediction predict_step(const train::TrainConfig& c, const SiteProfile& site, int devices) {
  Prediction p;
  const auto& s = c.strategy;
  p.dp = static_cast<int>(s.dp);
  p.tp = static_cast<int>(s.tp);
  p.pp = static_cast<int>(s.pp);
  p.devices = devices > 0 ? devices : static_cast<int>(s.world_size());
  p.precision = c.precision.dtype;
  p.model = c.model.name;
  if (site.device_is_cpu_core) {
    // the trainer's threads: the case's `threads`, 0 = every core; ranks on a node share its cores
    const double ranks_per_node = static_cast<double>(std::min<i64>(p.devices, site.devices_per_node));
    const double threads = c.threads > 0 ? static_cast<double>(c.threads) : site.devices_per_node;
    p.devices_per_rank = std::min(threads, site.devices_per_node / ranks_per_node);
  }
  p.memory_available = site.memory_bytes * p.devices_per_rank;
  const bool resnet = train::trains_resnet(c);
  p.gpt = !resnet;
  const auto refuse = [&p](Refusal kind, std::string reason) {
    p.feasible = false;
    p.refusal = kind;
    p.reason = std::move(reason);
    return p;
  };

  if (s.world_size() != p.devices)
    return refuse(Refusal::devices, fmt::format("dp × tp × pp = {} × {} × {} = {} ranks, but {} devices were given",
                              s.dp, s.tp, s.pp, s.world_size(), p.devices));
  if (s.tp > site.devices_per_node)
    return refuse(Refusal::tp_beyond_node, fmt::format("tp = {} exceeds the {} devices of one node of site '{}': tensor-"
                              "parallel collectives must stay inside a node",
                              s.tp, site.devices_per_node, site.name));
  if (c.global_batch % s.dp != 0)
    return refuse(Refusal::batch_split, fmt::format("batch.global = {} does not split over dp = {} replicas", c.global_batch, s.dp));
  const i64 local = c.global_batch / s.dp;
  i64 m = 1;
  if (s.micro_batches > 0) m = s.micro_batches;
  else if (c.micro_batch > 0) m = local / c.micro_batch;
  if (m < 1 || local % m != 0 || (s.micro_batches == 0 && c.micro_batch > 0 && local % c.micro_batch != 0))
    return refuse(Refusal::batch_split, fmt::format("the local batch of {} (batch.global {} / dp {}) does not split into "
                              "equal micro-batches (strategy.micro_batches {}, batch.micro {})",
                              local, c.global_batch, s.dp, s.micro_batches, c.micro_batch));
  p.micro_batches = static_cast<int>(m);
  p.micro_batch = local / m;

  const double element_bytes = c.precision.dtype == "fp32" ? 4.0 : 2.0;
  const Recompute recompute = recompute_from_string(s.recompute);
  ModelDescription d;
  std::vector<StageCost> stages;
  if (resnet) {
    SB_USER_CHECK(recompute == Recompute::none, "{}: 'strategy.recompute' is modelled for the GPT only",
                  c.source);
    const resnet::ResnetConfig r = resnet::resnet_config_by_name(c.model.name);
    d = describe_resnet(r, p.micro_batch, element_bytes);
    if (s.tp > 1) return refuse(Refusal::tp_heads, fmt::format("{} takes no tensor parallelism (tp = {})", r.name, s.tp));
    if (s.pp > static_cast<i64>(d.units.size()))
      return refuse(Refusal::pp_layers, fmt::format("pp = {} exceeds the {} pipeline units of {}", s.pp, d.units.size(), r.name));
    stages = resnet_stages(c, d);
  } else {
    const gpt::GptConfig g = train::gpt_config_of(c);
    const i64 seq = c.seq_len > 0 ? c.seq_len : g.max_seq_len;
    d = describe_gpt(g, p.micro_batch, seq, element_bytes);
    if (g.heads % s.tp != 0)
      return refuse(Refusal::tp_heads, fmt::format("tp = {} does not divide the {} attention heads of {}", s.tp, g.heads, g.name));
    if (s.pp > g.layers)
      return refuse(Refusal::pp_layers, fmt::format("pp = {} exceeds the {} blocks of {}", s.pp, g.layers, g.name));
    stages = gpt_stages(c, d, recompute);
  }

  // ---- memory per rank, the most loaded stage ---------------------------------------------
  const StateBytes bytes = state_bytes(c, element_bytes);
  std::size_t heaviest = 0;
  std::vector<RankMemory> memory;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    StageCost& st = stages[i];
    st.in_flight = s.schedule == "gpipe" ? m : std::min<i64>(m, s.pp - static_cast<i64>(i));
    const ModelStateBytes states = zero_model_state_bytes(st.parameters, p.dp, static_cast<int>(s.zero),
                                                          bytes.param, bytes.grad, bytes.optimizer);
    memory.push_back({states.params + st.buffer_bytes, states.grads, states.optimizer,
                      static_cast<double>(st.in_flight) * st.activation_bytes + st.shared_activation_bytes});
    if (memory[i].total() > memory[heaviest].total()) heaviest = i;
  }
  p.memory = memory[heaviest];
  if (p.memory.total() > site.memory_bytes * p.devices_per_rank)
    return refuse(Refusal::memory, fmt::format(
        "needs {:.1f} GiB per device on pipeline stage {} (params {:.1f}, grads {:.1f}, optimizer "
        "{:.1f}, activations {:.1f} GiB) but a {} has {:.1f} GiB",
        p.memory.total() / kGiB, heaviest, p.memory.params / kGiB, p.memory.grads / kGiB,
        p.memory.optimizer / kGiB, p.memory.activations / kGiB, site.device,
        site.memory_bytes * p.devices_per_rank / kGiB));

  // ---- time -------------------------------------------------------------------------------
  p.peak_flops = site.peak(c.precision.dtype);
  p.gemm_efficiency = site.efficiency(c.precision.dtype);
  p.calibrated = site.calibrated();
  const double flops_per_s = p.peak_flops * p.gemm_efficiency * p.devices_per_rank;
  const double memory_speed = site.memory_bandwidth * site.memory_efficiency.value_or(1.0) * p.devices_per_rank;
  const SiteLink tp_link = site.link(crosses_nodes(1, p.tp, site.devices_per_node));
  const SiteLink dp_link = site.link(crosses_nodes(p.tp, p.dp, site.devices_per_node));
  const SiteLink pp_link = site.link(crosses_nodes(p.tp * p.dp, p.pp, site.devices_per_node));
  const auto lc = [](const SiteLink& l) { return LinkCost{l.bandwidth, l.latency}; };
  const double tp_message = static_cast<double>(p.micro_batch * d.seq_len) *
                            (resnet ? 0.0 : static_cast<double>(d.gpt.channels)) * element_bytes;
  // a sequence-parallel pair (reduce-scatter + all-gather) costs what the all-reduce costs
  const double tp_collective =
      s.sequence_parallel ? ring_reduce_scatter_seconds(tp_message, p.tp, lc(tp_link)) +
                                ring_all_gather_seconds(tp_message, p.tp, lc(tp_link))
                          : ring_all_reduce_seconds(tp_message, p.tp, lc(tp_link));

  // ---- per-op costs, then the event simulation of the step ---------------------------------
  const double bucket_bytes = s.bucket_mb * 1024.0 * 1024.0;
  // a calibrated site times the trainer's kernel calls; otherwise FLOPs at the calibrated (or
  // datasheet) efficiency and memory traffic at the memory bandwidth
  // (timed with as many ranks busy on the node as this run puts there, where calibrate did so)
  const int rank_devices = std::max(1, static_cast<int>(std::lround(p.devices_per_rank)));
  int node_ranks = std::min(p.devices, std::max(1, site.devices_per_node / rank_devices));
  if (site.kernel_times && !site.kernel_times->covers(c.precision.dtype, rank_devices, node_ranks)) node_ranks = 1;
  const std::optional<std::vector<TimedStage>> timed =
      site.kernel_times ? timed_stages(stages, d, c, *site.kernel_times, rank_devices, node_ranks, recompute)
                        : std::nullopt;
  p.kernel_timed = timed.has_value();
  StepSimulationInput sim_input;
  sim_input.schedule = train::pipeline_schedule_from_string(s.schedule);
  sim_input.micro_batches = m;
  sim_input.overlap = s.overlap;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const StageCost& st = stages[i];
    StageOpCosts op;
    const double compute = st.executed_flops / flops_per_s + st.elementwise_bytes / memory_speed;
    op.forward_compute_s = st.forward_flops / flops_per_s + st.forward_elementwise_bytes / memory_speed;
    op.backward_compute_s = compute - op.forward_compute_s;
    if (timed) {
      op.forward_compute_s = (*timed)[i].forward_s;
      op.backward_compute_s = (*timed)[i].backward_s;
    }
    op.forward_tp_s = static_cast<double>(st.forward_tp_all_reduces) * tp_collective;
    op.backward_tp_s = static_cast<double>(st.tp_all_reduces - st.forward_tp_all_reduces) * tp_collective;
    const double message = p2p_seconds(st.boundary_bytes, lc(pp_link));
    if (i + 1 < stages.size()) op.send_forward_s = message;
    if (i > 0) op.send_backward_s = p2p_seconds(stages[i - 1].boundary_bytes, lc(pp_link));
    if (p.dp > 1) {
      // buckets of strategy.bucket_mb, or one reduction of everything without overlap; ZeRO-3
      // gathers each bucket's parameters again
      const double gradient_bytes = st.parameters * bytes.grad;
      const double bucket = s.overlap ? bucket_bytes : gradient_bytes;
      for (double done = 0; done < gradient_bytes; done += bucket) {
        const double size = std::min(bucket, gradient_bytes - done);
        double seconds = ring_all_reduce_seconds(size, p.dp, lc(dp_link));
        if (s.zero == 3) seconds += ring_all_gather_seconds(size, p.dp, lc(dp_link));
        op.bucket_bytes.push_back(size);
        op.bucket_s.push_back(seconds);
      }
    }
    const double owned = st.parameters / (s.zero >= 1 ? static_cast<double>(p.dp) : 1.0);
    op.optimizer_s = owned * optimizer_bytes_per_parameter(c, element_bytes) / memory_speed;
    if (timed) {
      const std::optional<double> optimizer =
          timed_optimizer_seconds(c, st.parameters, owned, element_bytes, *site.kernel_times, rank_devices,
                                  node_ranks);
      if (optimizer) op.optimizer_s = *optimizer;
    }
    sim_input.stages.push_back(std::move(op));
  }
  const StepSimulation sim = simulate_step(sim_input);
  const StageTimeline& critical = sim.stages[sim.critical_stage];
  p.critical_stage = static_cast<int>(sim.critical_stage);
  p.compute_s = critical.compute_s;
  p.tp_comm_s = critical.tp_s;
  p.p2p_s = critical.p2p_s;
  p.dp_comm_s = critical.dp_exposed_s;
  p.optimizer_s = critical.optimizer_s;
  p.bubble_s = critical.bubble_s;
  double step = sim.step_time_s;
  if (s.interleave > 1) {
    // not simulated: v virtual stages per device divide the idle time by v (Narayanan et al.)
    const double v = static_cast<double>(s.interleave);
    step -= p.bubble_s * (1.0 - 1.0 / v);
    p.bubble_s /= v;
  }
  p.comm_s = p.tp_comm_s + p.p2p_s + p.dp_comm_s;
  p.step_time_s = step;

  const double micro_batches_per_step = static_cast<double>(c.global_batch) / static_cast<double>(p.micro_batch);
  p.model_flops_per_step = d.training_flops() * micro_batches_per_step;
  double executed = 0;
  for (const StageCost& st : stages) executed += st.executed_flops * static_cast<double>(p.tp);
  p.executed_flops_per_step = executed * micro_batches_per_step;
  const double device_seconds = step * static_cast<double>(p.devices) * p.devices_per_rank;
  p.tflops_per_device = p.executed_flops_per_step / device_seconds / 1e12;
  p.mfu = p.model_flops_per_step / (device_seconds * p.peak_flops);
  p.samples_per_s = static_cast<double>(c.global_batch) / step;
  p.tokens_per_s = resnet ? 0.0 : p.samples_per_s * static_cast<double>(d.seq_len);
  p.cost_per_hour = site.price_per_device_hour.value_or(0.0) * static_cast<double>(p.devices) * p.devices_per_rank;
  p.feasible = true;
  return p;
}

}  // namespace sb::costmodel
