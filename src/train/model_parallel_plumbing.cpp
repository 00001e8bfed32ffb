// SPDX-License-Identifier: Apache-2.0
// Model-parallel plumbing over the grid's communicators.
#include "train/model_parallel_plumbing.hpp"

#include "core/check.hpp"
#include "train/device_staging.hpp"
#include "train/sixteen_bit_arrays.hpp"

namespace sb::train {

namespace {
constexpr int kTiedGradientTag = 1 << 22;
constexpr int kEvaluationTag = (1 << 22) + 1;
}  // namespace

gpt::TensorParallelGroup tensor_parallel_group(parallel::Communicator& tp) {
  gpt::TensorParallelGroup group;
  group.rank = tp.rank();
  group.size = tp.size();
  group.all_reduce_sum = [&tp](std::span<float> values) { tp.all_reduce(values, parallel::ReduceOp::sum); };
  group.all_reduce_max = [&tp](std::span<float> values) { tp.all_reduce(values, parallel::ReduceOp::max); };
  group.reduce_scatter_sum = [&tp](std::span<const float> send, std::span<float> recv) {
    SB_CHECK(send.size() == recv.size() * static_cast<std::size_t>(tp.size()),
             "tp reduce-scatter: {} values sent for {} received on each of {} ranks", send.size(), recv.size(),
             tp.size());
    tp.reduce_scatter(send.data(), recv.data(), static_cast<std::int64_t>(recv.size()), parallel::DataType::f32,
                      parallel::ReduceOp::sum);
  };
  group.all_gather = [&tp](std::span<const std::byte> send, std::span<std::byte> recv) {
    SB_CHECK(recv.size() == send.size() * static_cast<std::size_t>(tp.size()),
             "tp all-gather: {} bytes sent, {} received from {} ranks", send.size(), recv.size(), tp.size());
    tp.all_gather(send.data(), recv.data(), static_cast<std::int64_t>(send.size()), parallel::DataType::u8);
  };
  return group;
}

void sum_over_tensor_parallel(parallel::Communicator& tp, const std::vector<std::span<float>>& gradients) {
  if (tp.size() == 1) return;
  for (const std::span<float> gradient : gradients) tp.all_reduce(gradient, parallel::ReduceOp::sum);
}

double from_last_stage(parallel::Communicator& pp, double value) {
  if (pp.size() > 1) pp.broadcast(&value, 1, parallel::DataType::f64, pp.size() - 1);
  return value;
}

void sum_tied_gradient(parallel::Communicator& pp, std::span<float> gradient, Device device, std::span<float> scratch) {
  const int last = pp.size() - 1;
  if (last == 0 || (pp.rank() != 0 && pp.rank() != last)) return;
  SB_CHECK(scratch.size() >= gradient.size(), "tied gradient: scratch of {} floats for {}", scratch.size(),
           gradient.size());
  const auto n = static_cast<std::int64_t>(gradient.size());
  const int peer = pp.rank() == 0 ? last : 0;
  std::vector<float> mine = copy_to_host(std::span<const float>(gradient), device);
  parallel::Request receive = pp.irecv(scratch.data(), n, parallel::DataType::f32, peer, kTiedGradientTag);
  pp.send(mine.data(), n, parallel::DataType::f32, peer, kTiedGradientTag);
  receive.wait();
  // a + b on one stage, b + a on the other: the same floats.
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] += scratch[i];
  copy_from_host(gradient, device, std::span<const float>(mine));
}

void sum_tied_sixteen_bit_gradient(parallel::Communicator& pp, std::span<std::uint16_t> gradient,
                                   parallel::DataType type) {
  const int last = pp.size() - 1;
  if (last == 0 || (pp.rank() != 0 && pp.rank() != last)) return;
  SB_CHECK(type == parallel::DataType::bf16 || type == parallel::DataType::f16, "tied gradient of type {}",
           parallel::to_string(type));
  const auto n = static_cast<std::int64_t>(gradient.size());
  const int peer = pp.rank() == 0 ? last : 0;
  std::vector<std::uint16_t> theirs(gradient.size());
  parallel::Request receive = pp.irecv(theirs.data(), n, type, peer, kTiedGradientTag);
  pp.send(gradient.data(), n, type, peer, kTiedGradientTag);
  receive.wait();
  // a + b on one stage, b + a on the other: the same bits
  add_rounded(type, gradient, theirs);
}

void receive_from_previous_stage(parallel::Communicator& pp, std::span<std::byte> activation) {
  pp.recv(activation.data(), static_cast<std::int64_t>(activation.size()), parallel::DataType::u8,
          (pp.rank() + pp.size() - 1) % pp.size(), kEvaluationTag);
}

void send_to_next_stage(parallel::Communicator& pp, std::span<const std::byte> activation) {
  pp.send(activation.data(), static_cast<std::int64_t>(activation.size()), parallel::DataType::u8,
          (pp.rank() + 1) % pp.size(), kEvaluationTag);
}

}  // namespace sb::train
