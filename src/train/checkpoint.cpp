// SPDX-License-Identifier: Apache-2.0
// Gathering every rank's training state into one checkpoint on rank 0, and scattering it back
// on resume (each rank reads its own part; ZeRO-1 shards re-cut for the current dp size).
#include "train/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "io/checkpoint_file.hpp"
#include "parallel/fault.hpp"
#include "parallel/gather_text.hpp"
#include "train/device_staging.hpp"

namespace sb::train {

namespace {

// What must agree between a checkpoint and the run that resumes it (dp and zero may differ:
// the optimizer state is re-sharded; steps may grow).
io::Attributes identity_of(const plan::TrainConfig& c, const TrainingTask& task) {
  return {{"model", task.model_name()},
          {"parameters", task.parameter_count()},
          {"dataset", task.dataset_name()},
          {"precision", c.precision.dtype},
          {"optimizer", c.optimizer.type},
          {"seed", static_cast<std::int64_t>(c.seed)},
          {"global_batch", c.global_batch},
          {"seq_len", task.seq_len()},
          {"tp", c.strategy.tp},
          {"pp", c.strategy.pp}};
}

// ---- one rank's state as bytes, for gather_text ----
void put_i64(std::string& out, std::int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_floats(std::string& out, std::span<const float> v) {
  put_i64(out, static_cast<std::int64_t>(v.size()));
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}
void put_text(std::string& out, const std::string& text) {
  put_i64(out, static_cast<std::int64_t>(text.size()));
  out += text;
}

struct Reader {
  const std::string& bytes;
  std::size_t at = 0;
  std::int64_t i64() {
    std::int64_t v = 0;
    SB_CHECK(at + sizeof v <= bytes.size(), "checkpoint gather: truncated rank state");
    std::memcpy(&v, bytes.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::vector<float> floats() {
    const auto n = static_cast<std::size_t>(i64());
    SB_CHECK(at + n * sizeof(float) <= bytes.size(), "checkpoint gather: truncated rank state");
    std::vector<float> v(n);
    if (n) std::memcpy(v.data(), bytes.data() + at, n * sizeof(float));
    at += n * sizeof(float);
    return v;
  }
  std::string text() {
    const auto n = static_cast<std::size_t>(i64());
    SB_CHECK(at + n <= bytes.size(), "checkpoint gather: truncated rank state");
    std::string t = bytes.substr(at, n);
    at += n;
    return t;
  }
};

io::CheckpointRank unpack(const std::string& bytes) {
  Reader in{bytes};
  io::CheckpointRank r;
  r.rank = in.i64();
  r.dp_rank = in.i64();
  r.tp_rank = in.i64();
  r.pp_rank = in.i64();
  r.optimizer_begin = in.i64();
  r.parameters = in.floats();
  r.untrained_state = in.floats();
  const std::int64_t tensors = in.i64();
  for (std::int64_t k = 0; k < tensors; ++k) {
    std::string name = in.text();
    r.optimizer.emplace_back(std::move(name), in.floats());
  }
  return r;
}

}  // namespace

std::filesystem::path checkpoint_path_of(const plan::TrainConfig& c, const std::filesystem::path& out,
                                         const std::string& run_id) {
  if (!c.checkpoint.path.empty()) return c.checkpoint.path;
  return default_checkpoint_path(out, run_id);
}

std::filesystem::path default_checkpoint_path(const std::filesystem::path& out, const std::string& run_id) {
  std::filesystem::path p = out;
  if (p.extension() == ".h5") p.replace_extension();
  return fmt::format("{}.{}.ckpt.h5", p.string(), run_id);
}

std::filesystem::path checkpoint_source(const std::string& value, const std::filesystem::path& out) {
  if (value.rfind("run:", 0) == 0 && value.size() > 4) return default_checkpoint_path(out, value.substr(4));
  return value;
}

SavedWeights read_saved_weights(const std::filesystem::path& path, const std::string& model, const std::string& key,
                                const std::string& source) {
  SB_USER_CHECK(std::filesystem::is_regular_file(path), "{}: {} {}: no such checkpoint file", source, key,
                path.string());
  const io::Checkpoint checkpoint = io::read_checkpoint(path, [](const io::CheckpointRank& r) { return r.rank == 0; });
  const io::AttrValue& saved_model = io::checkpoint_attribute(checkpoint, "model", path);
  SB_USER_CHECK(saved_model == io::AttrValue{model}, "{}: {} {} holds a {}, not the {} this run needs", source, key,
                path.string(), io::to_string(saved_model), model);
  for (const char* grid : {"tp", "pp"}) {
    const io::AttrValue& size = io::checkpoint_attribute(checkpoint, grid, path);
    SB_USER_CHECK(size == io::AttrValue{std::int64_t{1}},
                  "{}: {} {} was written by a tensor- or pipeline-parallel run; start from a data-parallel one",
                  source, key, path.string());
  }
  SB_USER_CHECK(!checkpoint.ranks.empty() && checkpoint.ranks.front().rank == 0, "{}: {} {} has no rank 0", source,
                key, path.string());
  return {checkpoint.ranks.front().parameters, checkpoint.ranks.front().untrained_state};
}

Checkpointer::Checkpointer(const plan::TrainConfig& config, std::filesystem::path path, parallel::Communicator& world,
                           parallel::ProcessGrid& grid, TrainingTask& task, DistributedStep& step)
    : config_(config), path_(std::move(path)), world_(world), grid_(grid), task_(task), step_(step) {
}

void Checkpointer::check_flat_range() const {
  const OptimizerState& state = step_.optimizer_state();
  const auto parameters = static_cast<std::int64_t>(task_.parameters_flat().size());
  SB_CHECK(state.begin >= 0 && state.begin + state.count <= parameters,
           "optimizer state [{}, +{}) outside the {} flat parameters", state.begin, state.count, parameters);
  SB_CHECK(config_.strategy.zero >= 1 || state.count == parameters,
           "optimizer covers {} of {} parameters: checkpoints need every parameter in flat order", state.count,
           parameters);
}

bool Checkpointer::due(std::int64_t steps_done) const {
  return config_.checkpoint.every > 0 && steps_done % config_.checkpoint.every == 0;
}

bool Checkpointer::stop_requested() {
  const int signal = parallel::termination_signal();
  if (world_.size() == 1) return signal == SIGUSR1 || signal == SIGTERM || signal == SIGINT;
  return world_.all_reduce_value<std::int64_t>(signal == SIGUSR1 ? 1 : 0) > 0;
}

void Checkpointer::save(std::int64_t steps_done) {
  check_flat_range();
  OptimizerState& state = step_.optimizer_state();
  std::string mine;
  put_i64(mine, grid_.world_rank());
  put_i64(mine, grid_.dp_rank());
  put_i64(mine, grid_.tp_rank());
  put_i64(mine, grid_.pp_rank());
  put_i64(mine, state.begin);
  // data-parallel replicas hold the same parameters: dp rank 0's copy is kept. Every tensor is
  // staged through host memory (the task's may be on the GPU).
  const Device device = task_.device();
  const auto host = [device](std::span<const float> values) { return copy_to_host(values, device); };
  step_.gather_all_parameters();  // ZeRO-3, and mixed-precision ZeRO-1/2: from every rank's shard
  put_floats(mine, host(grid_.dp_rank() == 0 ? task_.parameters_flat() : std::span<float>{}));
  step_.release_all_parameters();
  put_floats(mine, host(task_.untrained_state_flat()));
  put_i64(mine, static_cast<std::int64_t>(state.tensors.size()));
  for (const auto& [name, values] : state.tensors) {
    put_text(mine, name);
    put_floats(mine, host(values));
  }
  const std::vector<std::string> all = parallel::gather_text(world_, mine, 0);
  if (world_.rank() == 0) {
    io::Checkpoint checkpoint;
    const optim::LossScaler* scaler = step_.loss_scaler();
    checkpoint.attributes = {{"step", steps_done},
                             {"data_position", steps_done},
                             {"rng", std::string("philox4x32-10 streams keyed by (seed, global step): the step is the "
                                                 "whole RNG state")},
                             {"optimizer_step", state.step_count()},
                             {"loss_scale", scaler ? scaler->scale() : 1.0},
                             {"loss_scale_good_steps", scaler ? scaler->good_steps() : std::int64_t{0}},
                             {"skipped_steps", scaler ? scaler->skipped_steps() : std::int64_t{0}},
                             {"dp", config_.strategy.dp},
                             {"zero", config_.strategy.zero},
                             {"config_yaml", config_.yaml}};
    for (auto& attribute : identity_of(config_, task_)) checkpoint.attributes.push_back(std::move(attribute));
    for (const std::string& bytes : all) checkpoint.ranks.push_back(unpack(bytes));
    io::write_checkpoint(path_, checkpoint);
  }
  world_.barrier();  // the checkpoint is on disk before any rank goes on (or exits)
  used_ = true;
}

void Checkpointer::finish(std::int64_t steps_done) {
  if (used_ && !due(steps_done)) save(steps_done);
}

std::int64_t Checkpointer::resume(std::int64_t total_steps) {
  const bool explicit_file = !config_.checkpoint.resume_from.empty();
  const std::filesystem::path from = explicit_file ? std::filesystem::path(config_.checkpoint.resume_from) : path_;
  if (!explicit_file && (config_.checkpoint.resume == "never" || !std::filesystem::exists(from))) return 0;
  SB_USER_CHECK(std::filesystem::exists(from), "--resume {}: no such checkpoint file", from.string());

  check_flat_range();
  const int t = grid_.tp_rank(), p = grid_.pp_rank(), d = grid_.dp_rank();
  const io::Checkpoint checkpoint = io::read_checkpoint(
      from, [&](const io::CheckpointRank& r) { return r.tp_rank == t && r.pp_rank == p; });
  const auto attribute = [&](const std::string& name) { return io::checkpoint_attribute(checkpoint, name, from); };
  for (const auto& [name, value] : identity_of(config_, task_)) {
    const io::AttrValue& saved = attribute(name);
    SB_USER_CHECK(saved == value,
                  "checkpoint {} is of another run ({} {} there, {} in {}); remove it, set checkpoint.path "
                  "elsewhere or checkpoint.resume: never",
                  from.string(), name, io::to_string(saved), io::to_string(value), config_.source);
  }
  const auto integer = [&](const std::string& name) {
    const io::AttrValue& v = attribute(name);
    SB_USER_CHECK(std::holds_alternative<std::int64_t>(v), "{}: checkpoint attribute {} is not an integer",
                  from.string(), name);
    return std::get<std::int64_t>(v);
  };
  const std::int64_t steps_done = integer("step");
  if (steps_done >= total_steps) {
    SB_USER_CHECK(!explicit_file, "--resume {}: the checkpoint holds {} steps, and this run has only {}",
                  from.string(), steps_done, total_steps);
    if (world_.rank() == 0)
      std::cout << fmt::format("checkpoint {} holds the finished run ({} steps); starting afresh\n", from.string(),
                               steps_done);
    return 0;
  }

  // This rank's coordinates in the saved grid: same tp/pp; dp rank 0 for parameters, its own
  // dp rank for BatchNorm statistics when the dp size is unchanged.
  const std::int64_t saved_dp = integer("dp");
  const io::CheckpointRank* replica = nullptr;
  const io::CheckpointRank* same = nullptr;
  std::vector<const io::CheckpointRank*> group;  // every saved dp rank of this (tp, pp)
  for (const io::CheckpointRank& r : checkpoint.ranks) {
    if (r.tp_rank != t || r.pp_rank != p) continue;
    group.push_back(&r);
    if (r.dp_rank == 0) replica = &r;
    if (r.dp_rank == d && saved_dp == config_.strategy.dp) same = &r;
  }
  SB_USER_CHECK(replica != nullptr, "checkpoint {} holds no state for tp rank {}, pp rank {}", from.string(), t, p);

  const std::span<float> parameters = task_.parameters_flat();
  SB_USER_CHECK(replica->parameters.size() == parameters.size(),
                "checkpoint {} holds {} parameters for tp rank {}, pp rank {}, but this model has {} there",
                from.string(), replica->parameters.size(), t, p, parameters.size());
  const Device device = task_.device();
  copy_from_host(parameters, device, std::span<const float>(replica->parameters));
  task_.parameters_updated();  // (mixed precision: rounded into the 16-bit weights while whole)
  step_.parameters_loaded();  // ZeRO: this rank's shard taken, the rest given back
  const std::span<float> untrained = task_.untrained_state_flat();
  const io::CheckpointRank& statistics = same ? *same : *replica;
  SB_USER_CHECK(statistics.untrained_state.size() == untrained.size(),
                "checkpoint {} holds {} running statistics for tp rank {}, pp rank {}, but this model has {}",
                from.string(), statistics.untrained_state.size(), t, p, untrained.size());
  copy_from_host(untrained, device, std::span<const float>(statistics.untrained_state));

  // Optimizer tensors: the saved pieces (whole, or ZeRO-1 shards) laid over the flat parameter
  // range, then this rank's range cut out of it.
  OptimizerState& state = step_.optimizer_state();
  for (auto& [name, values] : state.tensors) {
    std::vector<float> full(parameters.size());
    std::vector<char> covered(parameters.size(), 0);
    for (const io::CheckpointRank* r : group) {
      const auto piece = std::find_if(r->optimizer.begin(), r->optimizer.end(),
                                      [&](const auto& named) { return named.first == name; });
      SB_USER_CHECK(piece != r->optimizer.end(), "checkpoint {} has no optimizer tensor '{}' for rank {}",
                    from.string(), name, r->rank);
      SB_USER_CHECK(r->optimizer_begin >= 0 &&
                        r->optimizer_begin + static_cast<std::int64_t>(piece->second.size()) <=
                            static_cast<std::int64_t>(parameters.size()),
                    "checkpoint {}: optimizer tensor '{}' of rank {} lies outside the parameters", from.string(),
                    name, r->rank);
      std::copy(piece->second.begin(), piece->second.end(), full.begin() + r->optimizer_begin);
      std::fill_n(covered.begin() + r->optimizer_begin, piece->second.size(), 1);
    }
    SB_USER_CHECK(std::all_of(covered.begin() + state.begin, covered.begin() + state.begin + state.count,
                              [](char c) { return c != 0; }),
                  "checkpoint {} does not hold optimizer tensor '{}' for all of parameters [{}, {})", from.string(),
                  name, state.begin, state.begin + state.count);
    SB_CHECK(static_cast<std::int64_t>(values.size()) == state.count, "optimizer tensor '{}' of {} for {}", name,
             values.size(), state.count);
    copy_from_host(values, device, std::span<const float>(full).subspan(static_cast<std::size_t>(state.begin),
                                                                        static_cast<std::size_t>(state.count)));
  }
  state.set_step_count(integer("optimizer_step"));
  if (optim::LossScaler* scaler = step_.loss_scaler()) {
    const io::AttrValue& scale = attribute("loss_scale");
    SB_USER_CHECK(std::holds_alternative<double>(scale), "{}: checkpoint attribute loss_scale is not a number",
                  from.string());
    scaler->restore(std::get<double>(scale), integer("loss_scale_good_steps"), integer("skipped_steps"));
  }
  world_.barrier();
  used_ = !explicit_file || from == path_;
  return steps_done;
}

}  // namespace sb::train
