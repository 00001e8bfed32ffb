// SPDX-License-Identifier: Apache-2.0
// Resolution of a GptPartition into local sizes, local tensor shapes and the local-to-unsplit
// index map. Leaves out the model itself (gpt.cpp).
#include "models/gpt/gpt_partition.hpp"

#include "core/check.hpp"

namespace sb::gpt {

using i64 = std::int64_t;

GptShard resolve_gpt_partition(const GptConfig& config, const GptPartition& p) {
  validate_gpt_config(config);
  SB_USER_CHECK(config.block == GptBlock::gpt2,
                "gpt '{}' has Llama-style blocks (grouped-query attention, rotary positions, untied head), which "
                "the trainer does not build: only `scalebench predict` and `plan` model it (trainable: gpt-nano, "
                "gpt-tiny, gpt-small, gpt2-124m)", config.name);
  SB_USER_CHECK(!config.spec_only, "gpt '{}' is spec only: its shapes serve the cost model, it "
                "cannot be trained (trainable: gpt-nano, gpt-tiny, gpt-small, gpt2-124m)",
                config.name);
  SB_USER_CHECK(p.tp.size == 1 || (p.tp.all_reduce_sum && p.tp.all_reduce_max),
                "gpt '{}': tensor parallelism tp = {} needs the tp group's all-reduce hooks",
                config.name, p.tp.size);
  SB_USER_CHECK(!p.sequence_parallel || (p.tp.size > 1 && p.tp.reduce_scatter_sum && p.tp.all_gather),
                "gpt '{}': sequence parallelism splits the tensor-parallel group's token rows; it needs tp > 1 "
                "(got {}) and the group's reduce-scatter and all-gather hooks", config.name, p.tp.size);
  return gpt_shard_shape(config, p);
}

GptShard gpt_shard_shape(const GptConfig& config, const GptPartition& p) {
  GptShard s;
  const i64 end = p.layer_end < 0 ? config.layers : p.layer_end;
  SB_USER_CHECK(p.layer_begin >= 0 && p.layer_begin < end && end <= config.layers,
                "gpt '{}': a stage must hold blocks [begin, end) with 0 <= begin < end <= layers "
                "({}), got [{}, {})", config.name, config.layers, p.layer_begin, end);
  const int t = p.tp.size;
  SB_USER_CHECK(t >= 1 && p.tp.rank >= 0 && p.tp.rank < t,
                "gpt '{}': tensor-parallel rank {} outside a group of size {}", config.name,
                p.tp.rank, t);
  SB_USER_CHECK(config.heads % t == 0,
                "gpt '{}': tensor parallelism tp = {} must divide the attention heads ({}) "
                "(strategy.tp)", config.name, t, config.heads);
  SB_USER_CHECK((4 * config.channels) % t == 0,
                "gpt '{}': tensor parallelism tp = {} must divide the MLP width 4·channels ({}) "
                "(strategy.tp)", config.name, t, 4 * config.channels);
  SB_USER_CHECK(config.vocab >= t,
                "gpt '{}': tensor parallelism tp = {} exceeds the vocabulary ({}) (strategy.tp)",
                config.name, t, config.vocab);
  SB_USER_CHECK(p.activation_slots >= 1, "gpt '{}': activation_slots must be >= 1, got {}",
                config.name, p.activation_slots);
  s.layer_begin = p.layer_begin;
  s.L = end - p.layer_begin;
  s.C = config.channels;
  s.NH = config.heads;
  s.V = config.vocab;
  s.maxT = config.max_seq_len;
  s.tp_rank = p.tp.rank;
  s.tp_size = t;
  s.C_tp = s.C / t;
  s.NH_tp = s.NH / t;
  s.F_tp = 4 * s.C / t;
  s.vocab_begin = static_cast<i64>(p.tp.rank) * s.V / t;
  s.V_tp = static_cast<i64>(p.tp.rank + 1) * s.V / t - s.vocab_begin;
  s.embedding = p.embedding;
  s.head = p.head;
  s.activation_slots = p.activation_slots;
  s.recompute = p.recompute;
  s.sequence_parallel = p.sequence_parallel && s.tp_size > 1;
  return s;
}

TensorSplit gpt_tensor_split(int k) {
  using enum TensorSplit;
  static constexpr std::array<TensorSplit, kGptTensorCount> splits{
      vocab_rows, replicated, replicated, replicated, qkv_rows, qkv_rows, columns, replicated,
      replicated, replicated, rows,       rows,       columns,  replicated, replicated, replicated};
  return splits[static_cast<std::size_t>(k)];
}

namespace {

// Unsplit (rows, columns) of one block's slice of tensor k, k in [2, 14).
std::pair<i64, i64> block_matrix(const GptShard& s, int k) {
  const i64 C = s.C;
  static constexpr std::array<std::pair<int, int>, kGptTensorCount> in_units_of_C{{
      {0, 0}, {0, 0}, {1, 0}, {1, 0}, {3, 1}, {3, 0}, {1, 1}, {1, 0},
      {1, 0}, {1, 0}, {4, 1}, {4, 0}, {1, 4}, {1, 0}, {0, 0}, {0, 0}}};
  const auto [r, c] = in_units_of_C[static_cast<std::size_t>(k)];
  return {r * C, c == 0 ? 1 : c * C};  // vectors are (rows, 1)
}

// Local (rows, columns) of one block's slice of tensor k.
std::pair<i64, i64> local_block_matrix(const GptShard& s, int k) {
  auto [rows, cols] = block_matrix(s, k);
  switch (gpt_tensor_split(k)) {
    case TensorSplit::qkv_rows:
    case TensorSplit::rows: rows /= s.tp_size; break;
    case TensorSplit::columns: cols /= s.tp_size; break;
    default: break;
  }
  return {rows, cols};
}

}  // namespace

std::array<Shape, kGptTensorCount> gpt_shard_shapes(const GptConfig& config, const GptShard& s) {
  std::array<Shape, kGptTensorCount> shapes;
  const i64 C = s.C;
  shapes[0] = Shape{s.embedding || s.head ? s.V_tp : 0, C};
  shapes[1] = Shape{s.embedding ? config.max_seq_len : 0, C};
  for (int k = 2; k < 14; ++k) {
    const auto [rows, cols] = local_block_matrix(s, k);
    shapes[static_cast<std::size_t>(k)] = cols == 1 ? Shape{s.L, rows} : Shape{s.L, rows, cols};
  }
  shapes[14] = Shape{s.head ? C : 0};
  shapes[15] = Shape{s.head ? C : 0};
  return shapes;
}

i64 gpt_shard_parameter_count(const GptConfig& config, const GptShard& shard) {
  i64 n = 0;
  for (const Shape& shape : gpt_shard_shapes(config, shard)) n += shape.numel();
  return n;
}

i64 gpt_unsplit_index(const GptShard& s, int k, i64 i) {
  if (k == 0) return s.vocab_begin * s.C + i;  // whole rows of wte
  if (k == 1 || k >= 14) return i;             // wpe, lnfw, lnfb: never split
  const auto [rows, cols] = block_matrix(s, k);
  const auto [local_rows, local_cols] = local_block_matrix(s, k);
  const i64 per_layer = local_rows * local_cols;
  const i64 l = i / per_layer, row = (i % per_layer) / local_cols, col = i % local_cols;
  i64 g_row = row, g_col = col;
  switch (gpt_tensor_split(k)) {
    case TensorSplit::qkv_rows:  // row in [q_r | k_r | v_r], each C/t rows
      g_row = (row / s.C_tp) * s.C + s.tp_rank * s.C_tp + row % s.C_tp;
      break;
    case TensorSplit::rows: g_row = s.tp_rank * local_rows + row; break;
    case TensorSplit::columns: g_col = s.tp_rank * local_cols + col; break;
    default: break;
  }
  return ((s.layer_begin + l) * rows + g_row) * cols + g_col;
}

}  // namespace sb::gpt
