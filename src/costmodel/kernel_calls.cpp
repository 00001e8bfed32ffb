// Kernel calls per pipeline unit, written beside the trainer's forward and backward (the
// comments name the lines they mirror). tests/costmodel/test_kernel_calls.cpp checks that their
// FLOPs add up to the trainer's counters, so a change on one side shows.
#include "costmodel/kernel_calls.hpp"

#include "core/check.hpp"
#include "models/resnet/resnet_partition.hpp"

namespace sb::costmodel {

namespace {

using i64 = std::int64_t;

// A backward's size is twice its forward's: the input's and the weight's gradients.
double passes(const std::string& kernel) { return kernel.ends_with("_backward") ? 2.0 : 1.0; }

KernelCall matmul(const char* kernel, i64 BT, i64 C, i64 OC) {
  return {kernel, {BT, C, OC}, passes(kernel) * 2.0 * static_cast<double>(BT * C * OC)};
}
KernelCall elements(const char* kernel, std::vector<i64> shape, i64 n) {
  return {kernel, std::move(shape), static_cast<double>(n)};
}
// memset of n elements of `bytes` bytes: shape and size in bytes
KernelCall fill(i64 n, i64 bytes) { return {"fill", {n * bytes}, static_cast<double>(n * bytes)}; }

// conv2d_forward/backward(N, C, H, W, OC, KH, KW, stride, pad)
KernelCall conv(const char* kernel, i64 N, i64 C, i64 H, i64 OC, i64 K, i64 stride, i64 pad) {
  const i64 OH = (H + 2 * pad - K) / stride + 1;
  return {kernel, {N, C, H, H, OC, K, K, stride, pad},
          passes(kernel) * 2.0 * static_cast<double>(N * OC * OH * OH * C * K * K)};
}

// A BatchNorm in training: channel sums, statistics, apply (forward); sums, apply (backward).
// The statistics are per channel (C values): their cost is in the sums' calls.
// forward_apply's shape ends with whether it adds a residual and applies a ReLU (1 or 0).
void batchnorm(KernelCalls& calls, i64 N, i64 C, i64 HW, bool residual, bool relu) {
  calls.forward.push_back(elements("batchnorm2d_channel_sums", {N, C, HW}, N * C * HW));
  calls.forward.push_back(elements("batchnorm2d_forward_apply", {N, C, HW, residual ? 1 : 0, relu ? 1 : 0}, N * C * HW));
}
void batchnorm_backward(std::vector<KernelCall>& backward, i64 N, i64 C, i64 HW) {
  backward.push_back(elements("batchnorm2d_backward_sums", {N, C, HW}, N * C * HW));
  backward.push_back(elements("batchnorm2d_backward_apply", {N, C, HW}, N * C * HW));
}

}  // namespace

KernelCalls gpt_unit_kernel_calls(const gpt::GptConfig& g, GptUnitKind unit, i64 tp, i64 B, i64 T, int element_bytes) {
  const i64 eb = element_bytes;
  SB_CHECK(tp >= 1 && g.heads % tp == 0 && B >= 1 && T >= 1, "gpt kernel calls: tp {} B {} T {}", tp, B, T);
  const i64 C = g.channels, Ct = C / tp, F = 4 * C / tp, NH = g.heads / tp, V = g.vocab, Vr = V / tp;
  const i64 BT = B * T;
  KernelCalls k;
  switch (unit) {
    case GptUnitKind::embedding:  // gpt.cpp forward: embedding (shard) lookup; backward: its scatter-add
      if (tp == 1) {
        k.forward.push_back(elements("embedding_forward", {B, T, C}, BT * C));
        k.backward.push_back(elements("embedding_backward", {B, T, C}, BT * C));
      } else {
        k.forward.push_back(elements("embedding_shard_forward", {Vr, B, T, C}, BT * C));
        k.backward.push_back(elements("embedding_shard_backward", {Vr, B, T, C}, BT * C));
      }
      break;
    case GptUnitKind::block:  // gpt.cpp: the block loop of forward_from and backward
      k.forward = {elements("layernorm_forward", {BT, C}, BT * C),
                   matmul("matmul_forward", BT, C, 3 * Ct),
                   {"attention_forward", {B, T, Ct, NH}, 4.0 * static_cast<double>(B * T * T * Ct)},
                   matmul("matmul_forward", BT, Ct, C),
                   elements("residual_forward", {BT * C}, BT * C),
                   elements("layernorm_forward", {BT, C}, BT * C),
                   matmul("matmul_forward", BT, C, F),
                   elements("gelu_forward", {BT * F}, BT * F),
                   matmul("matmul_forward", BT, F, C),
                   elements("residual_forward", {BT * C}, BT * C)};
      k.backward = {fill(BT * C, eb),                              // din
                    fill(BT * (5 * C + 4 * Ct + 2 * F), eb),       // the block's scratch, dln1 .. dfcproj
                    elements("residual_backward", {BT * C}, BT * C),
                    matmul("matmul_backward", BT, F, C),
                    elements("gelu_backward", {BT * F}, BT * F),
                    matmul("matmul_backward", BT, C, F),
                    elements("layernorm_backward", {BT, C}, BT * C),
                    elements("residual_backward", {BT * C}, BT * C),
                    matmul("matmul_backward", BT, Ct, C),
                    {"attention_backward", {B, T, Ct, NH}, 8.0 * static_cast<double>(B * T * T * Ct)},
                    matmul("matmul_backward", BT, C, 3 * Ct),
                    elements("layernorm_backward", {BT, C}, BT * C)};
      break;
    case GptUnitKind::head:  // final LayerNorm, tied logits, (vocabulary-parallel) cross-entropy
      k.forward = {elements("layernorm_forward", {BT, C}, BT * C), matmul("matmul_forward", BT, C, Vr)};
      if (tp == 1) {
        k.forward.push_back(elements("crossentropy_forward", {BT, V}, BT * V));
        k.backward.push_back(fill(BT * (V + 3 * C), eb));  // dlogits .. dresidual_in
        k.backward.push_back(elements("crossentropy_backward", {BT, Vr}, BT * Vr));
      } else {
        k.forward.push_back(elements("crossentropy_shard_max", {BT, Vr}, BT * Vr));
        k.forward.push_back(elements("crossentropy_shard_partials", {Vr, BT, Vr}, BT * Vr));
        k.forward.push_back(elements("crossentropy_shard_finish", {BT, Vr}, BT * Vr));
        k.backward.push_back(fill(BT * (Vr + 3 * C), eb));
        k.backward.push_back(elements("crossentropy_shard_backward", {Vr, BT, Vr}, BT * Vr));
      }
      k.backward.push_back(matmul("matmul_backward", BT, C, Vr));
      k.backward.push_back(elements("layernorm_backward", {BT, C}, BT * C));
      break;
  }
  return k;
}

std::vector<KernelCall> optimizer_kernel_calls(const std::string& optimizer, i64 parameters, i64 owned,
                                               int element_bytes) {
  SB_CHECK(optimizer == "adamw" || optimizer == "sgd", "optimizer kernel calls: '{}'", optimizer);
  std::vector<KernelCall> calls = {fill(parameters, 4),
                                   elements(optimizer == "adamw" ? "adamw_step" : "sgd_step", {owned}, owned)};
  if (element_bytes < 4) calls.push_back(elements("narrow", {parameters}, parameters));
  return calls;
}

bool resnet_kernel_calls_known(const resnet::ResnetConfig& config) {
  return config.block == resnet::ResnetBlock::basic && !config.stem_maxpool;
}

KernelCalls resnet_unit_kernel_calls(const resnet::ResnetConfig& config, std::size_t unit, i64 N, int element_bytes) {
  const i64 eb = element_bytes;
  SB_USER_CHECK(resnet_kernel_calls_known(config),
                "resnet '{}': its kernel calls are known only for basic blocks without a stem max pool "
                "(the networks the trainer runs)", config.name);
  const std::vector<resnet::ResnetBlockShape> blocks = resnet::resnet_blocks(config);
  SB_CHECK(unit < blocks.size() + 2, "resnet kernel calls: unit {} of {}", unit, blocks.size() + 2);
  KernelCalls k;
  if (unit == 0) {  // resnet.cpp forward_from: relu(bn(conv(images))); backward: bn, conv's weight gradient
    const i64 IC = config.image_channels, size = config.image_size, C0 = config.stem_channels;
    const i64 S0 = resnet::resnet_stem_output_size(config), K = config.stem_kernel;
    k.forward.push_back(conv("conv2d_forward", N, IC, size, C0, K, config.stem_stride, K / 2));
    batchnorm(k, N, C0, S0 * S0, false, true);
    batchnorm_backward(k.backward, N, C0, S0 * S0);
    k.backward.push_back(conv("conv2d_backward_weight", N, IC, size, C0, K, config.stem_stride, K / 2));
    return k;
  }
  if (unit == blocks.size() + 1) {  // global average pool, linear, cross-entropy
    const resnet::ResnetBlockShape& last = blocks.back();
    const i64 features = last.out_channels, hw = last.out_size * last.out_size, classes = config.classes;
    k.forward = {elements("global_avgpool_forward", {N, features, hw}, N * features * hw),
                 matmul("matmul_forward", N, features, classes),
                 elements("crossentropy_forward", {N, classes}, N * classes)};
    k.backward = {fill(N * features * hw, eb),
                  elements("crossentropy_backward", {N, classes}, N * classes),
                  matmul("matmul_backward", N, features, classes),
                  elements("global_avgpool_backward", {N, features, hw}, N * features * hw)};
    return k;
  }
  // resnet.cpp block_forward / block_backward
  const resnet::ResnetBlockShape& s = blocks[unit - 1];
  const i64 IC = s.in_channels, H = s.in_size, OC = s.out_channels, OHW = s.out_size * s.out_size;
  const i64 n = N * OC * OHW;
  if (s.shortcut_conv) {
    k.forward.push_back(conv("conv2d_forward", N, IC, H, OC, 1, s.stride, 0));
    batchnorm(k, N, OC, OHW, false, false);
  }
  k.forward.push_back(conv("conv2d_forward", N, IC, H, OC, 3, s.stride, 1));
  batchnorm(k, N, OC, OHW, false, true);
  k.forward.push_back(conv("conv2d_forward", N, OC, s.out_size, OC, 3, 1, 1));
  batchnorm(k, N, OC, OHW, true, true);

  k.backward.push_back(fill(N * IC * H * H, eb));  // din, before the block
  batchnorm_backward(k.backward, N, OC, OHW);
  if (s.shortcut_conv) {
    batchnorm_backward(k.backward, N, OC, OHW);
    k.backward.push_back(conv("conv2d_backward", N, IC, H, OC, 1, s.stride, 0));
  } else {
    k.backward.push_back(elements("relu_backward", {n}, n));
  }
  k.backward.push_back(fill(n, eb));
  k.backward.push_back(conv("conv2d_backward", N, OC, s.out_size, OC, 3, 1, 1));
  batchnorm_backward(k.backward, N, OC, OHW);
  k.backward.push_back(conv("conv2d_backward", N, IC, H, OC, 3, s.stride, 1));
  return k;
}

}  // namespace sb::costmodel
