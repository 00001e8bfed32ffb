// SPDX-License-Identifier: Apache-2.0
// The storage-policy kernels: one float kernel call each, its 16-bit operands widened into
// scratch before and its 16-bit outputs rounded back after (nothing to do for float); with
// 16-bit S on cuda the GPT's kernels go to the native table instead, and bf16 GEMMs on a cpu
// with bf16 instructions to oneDNN.
#include "kernels/storage_kernels.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "core/check.hpp"
#include "core/cpu_isa.hpp"
#include "core/device_memory.hpp"
#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/onednn_bf16_matmul.hpp"
#include "kernels/cpu/onednn_conv2d.hpp"
#include "kernels/cpu/packed_matmul.hpp"

namespace sb::kernels {

namespace {

constexpr i64 kChunkFloats = i64{1} << 20;  // 4 MiB: a new chunk is at least this large
constexpr i64 kAlignFloats = 16;            // 64 bytes
template <class S>
constexpr int kStorageBytes = static_cast<int>(sizeof(S));

// One call's entry in the recorder, when there is one: logged before the kernel runs, its
// hooks around the kernel (the scope of this object). skips_kernel(): a recording only.
class CallRecord {
 public:
  CallRecord(KernelRecorder* recorder, const char* kernel, std::vector<i64> shape, const KernelWork& work)
      : recorder_(recorder) {
    if (!recorder_) return;
    recorder_->record({kernel, std::move(shape), work.size, work.flops, work.bytes});
    if (recorder_->runs_kernels()) recorder_->call_started();
  }
  CallRecord(const CallRecord&) = delete;
  CallRecord& operator=(const CallRecord&) = delete;
  ~CallRecord() {
    if (recorder_ && recorder_->runs_kernels()) recorder_->call_finished();
  }
  bool skips_kernel() const { return recorder_ && !recorder_->runs_kernels(); }

 private:
  KernelRecorder* recorder_;
};

void convert(const KernelTable& k, float* out, const bf16* inp, i64 n) { k.convert_bf16_to_f32(out, inp, n); }
void convert(const KernelTable& k, float* out, const fp16* inp, i64 n) { k.convert_fp16_to_f32(out, inp, n); }
void convert(const KernelTable& k, bf16* out, const float* inp, i64 n) { k.convert_f32_to_bf16(out, inp, n); }
void convert(const KernelTable& k, fp16* out, const float* inp, i64 n) { k.convert_f32_to_fp16(out, inp, n); }

// One kernel call's float views of its S operands. in(): read only; inout(): read and written
// (the backward kernels' +=); out(): written whole. Outputs are rounded back to S when the call
// ends. For float every view is the operand itself.
template <class S>
class Widened {
 public:
  Widened(const KernelTable& k, WideningScratch* scratch) : k_(k), scratch_(scratch) {}
  Widened(const Widened&) = delete;
  Widened& operator=(const Widened&) = delete;
  ~Widened() {
    if constexpr (!std::is_same_v<S, float>) {
      for (const auto& [wide, narrow, n] : outputs_) convert(k_, narrow, wide, n);
      scratch_->release_all();
    }
  }

  const float* in(const S* p, i64 n) { return view(const_cast<S*>(p), n, true, false); }
  float* inout(S* p, i64 n) { return view(p, n, true, true); }
  float* out(S* p, i64 n) { return view(p, n, false, true); }

 private:
  // A float view of p (n values): converted in when read, rounded back at the end when written.
  float* view(S* p, i64 n, bool read, bool written) {
    if constexpr (std::is_same_v<S, float>) {
      return p;
    } else {
      if (!p) return nullptr;
      float* wide = scratch_->take(n);
      if (read) convert(k_, wide, p, n);
      if (written) outputs_.push_back({wide, p, n});
      return wide;
    }
  }

  struct Output {
    float* wide;
    S* narrow;
    i64 n;
  };
  const KernelTable& k_;
  WideningScratch* scratch_;
  std::vector<Output> outputs_;
};

// Rows of an embedding table a lookup touches: 1 + the largest token (the table's own row
// count is not a kernel argument). Tokens on the GPU are read back first.
i64 vocab_rows(const std::int32_t* tokens, i64 n, Device device) {
  std::vector<std::int32_t> host;
  if (device != Device::cpu) {
    host.resize(static_cast<std::size_t>(n));
    copy_device_bytes(host.data(), Device::cpu, tokens, device, host.size() * sizeof(std::int32_t));
    tokens = host.data();
  }
  std::int32_t largest = 0;
  for (i64 i = 0; i < n; ++i) largest = std::max(largest, tokens[i]);
  return static_cast<i64>(largest) + 1;
}

}  // namespace

WideningScratch::WideningScratch(MemoryTracker& tracker, std::string label, Device device)
    : tracker_(&tracker), label_(std::move(label)), device_(device) {}

float* WideningScratch::take(i64 count) {
  const i64 n = (count + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  while (used_chunk_ < chunks_.size()) {
    const i64 capacity = chunks_[used_chunk_].bytes() / static_cast<i64>(sizeof(float));
    if (used_floats_ + n <= capacity) {
      float* p = chunks_[used_chunk_].as<float>() + used_floats_;
      used_floats_ += n;
      return p;
    }
    ++used_chunk_, used_floats_ = 0;
  }
  const i64 floats = std::max(n, kChunkFloats);
  chunks_.emplace_back(*tracker_, MemoryCategory::workspace, floats * static_cast<i64>(sizeof(float)), label_,
                       device_);
  used_chunk_ = chunks_.size() - 1;
  used_floats_ = n;
  return chunks_.back().as<float>();
}

template <class S>
StorageKernels<S>::StorageKernels(Backend backend, MemoryTracker& tracker, KernelRecorder* recorder)
    : k_(&kernels_for(backend)), device_(memory_device(backend)), recorder_(recorder) {
  if constexpr (!std::is_same_v<S, float>) {
#ifdef SB_HAVE_CUDA
    if (backend == Backend::cuda) native_ = &cuda::native_storage_kernels<S>();
#endif
    scratch_ = std::make_unique<WideningScratch>(tracker, std::string("widened ") + storage_name<S>() + " operands",
                                                 device_);
    host_sixteen_bit_ = backend == Backend::cpu;  // cpu/sixteen_bit_elementwise.hpp
  }
  if constexpr (std::is_same_v<S, bf16>) {
    if (backend == Backend::cpu && onednn_has_native_bf16())
      onednn_matmul_ = std::make_unique<cpu::OnednnBf16Matmul>(*scratch_);
  }
  if constexpr (std::is_same_v<S, fp16>) {
    if (backend == Backend::cpu && onednn_splits_fp16_matmul())
      onednn_matmul_ = std::make_unique<cpu::OnednnBf16Matmul>(*scratch_);
  }
  if constexpr (!std::is_same_v<S, float>)
    packed_matmul_ = backend == Backend::cpu && !onednn_matmul_ && cpu_runs_avx512_kernels();
  if (backend == Backend::cpu && onednn_runs_fp32_conv2d()) {
    conv_scratch_ = std::make_unique<WideningScratch>(tracker, "oneDNN convolution operands", device_);
    onednn_conv_ = std::make_unique<cpu::OnednnConv2d>(*conv_scratch_);
    native_conv_ = std::is_same_v<S, bf16> && onednn_has_native_bf16();
  }
}

template <class S>
StorageKernels<S>::~StorageKernels() = default;
template <class S>
StorageKernels<S>::StorageKernels(StorageKernels&&) noexcept = default;
template <class S>
StorageKernels<S>& StorageKernels<S>::operator=(StorageKernels&&) noexcept = default;

template <class S>
bool StorageKernels<S>::widens_gemms() const {
  return !std::is_same_v<S, float> && !native_ && !onednn_matmul_ && !packed_matmul_;
}

template <class S>
void StorageKernels<S>::widen(float* out, const S* inp, i64 N) const {
  if constexpr (std::is_same_v<S, float>)
    copy_device_bytes(out, device_, inp, device_, static_cast<std::size_t>(N) * sizeof(float));
  else
    convert(*k_, out, inp, N);
}

template <class S>
void StorageKernels<S>::narrow(S* out, const float* inp, i64 N) const {
  if constexpr (std::is_same_v<S, float>)
    copy_device_bytes(out, device_, inp, device_, static_cast<std::size_t>(N) * sizeof(float));
  else
    convert(*k_, out, inp, N);
}

template <class S>
void StorageKernels<S>::begin_unit(const char* unit) {
  if (recorder_) recorder_->begin_unit(unit);
}

template <class S>
void StorageKernels<S>::zero(void* data, i64 bytes) {
  const CallRecord record(recorder_, "fill", {bytes}, fill_work(bytes));
  if (record.skips_kernel() || bytes == 0) return;
  zero_device_bytes(device_, data, static_cast<std::size_t>(bytes));
}

template <class S>
void StorageKernels<S>::matmul_forward(S* out, const S* inp, const S* weight, const S* bias, i64 BT, i64 C,
                                       i64 OC) {
  const CallRecord record(recorder_, "matmul_forward", {BT, C, OC}, matmul_forward_work(BT, C, OC, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->matmul_forward(out, inp, weight, bias, BT, C, OC);
  if constexpr (!std::is_same_v<S, float>) {
    if (onednn_matmul_ && BT > 0 && C > 0 && OC > 0) return onednn_matmul_->forward(out, inp, weight, bias, BT, C, OC);
    if (packed_matmul_ && BT > 0 && C > 0 && OC > 0) {
      cpu::packed_matmul_forward(*scratch_, out, inp, weight, bias, BT, C, OC);
      return scratch_->release_all();
    }
  }
  Widened<S> w(*k_, scratch_.get());
  k_->matmul_forward(w.out(out, BT * OC), w.in(inp, BT * C), w.in(weight, OC * C), w.in(bias, OC), BT, C, OC);
}

template <class S>
void StorageKernels<S>::matmul_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp,
                                        const S* weight, i64 BT, i64 C, i64 OC) {
  const CallRecord record(recorder_, "matmul_backward", {BT, C, OC}, matmul_backward_work(BT, C, OC, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->matmul_backward(dinp, dweight, dbias, dout, inp, weight, BT, C, OC);
  if constexpr (!std::is_same_v<S, float>) {
    if (onednn_matmul_ && BT > 0 && C > 0 && OC > 0)
      return onednn_matmul_->backward(dinp, dweight, dbias, dout, inp, weight, BT, C, OC);
    if (packed_matmul_ && BT > 0 && C > 0 && OC > 0) {
      cpu::packed_matmul_backward(*scratch_, dinp, dweight, dbias, dout, inp, weight, BT, C, OC);
      return scratch_->release_all();
    }
  }
  Widened<S> w(*k_, scratch_.get());
  k_->matmul_backward(w.inout(dinp, BT * C), dweight, dbias, w.in(dout, BT * OC), w.in(inp, BT * C),
                      w.in(weight, OC * C), BT, C, OC);
}

template <class S>
void StorageKernels<S>::embedding_forward(S* out, const std::int32_t* tokens, const S* wte, const S* wpe, i64 B,
                                          i64 T, i64 C) {
  const CallRecord record(recorder_, "embedding_forward", {B, T, C}, embedding_forward_work(B, T, C, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->embedding_forward(out, tokens, wte, wpe, B, T, C);
  Widened<S> w(*k_, scratch_.get());
  const i64 V = vocab_rows(tokens, B * T, device_);
  k_->embedding_forward(w.out(out, B * T * C), tokens, w.in(wte, V * C), w.in(wpe, T * C), B, T, C);
}

template <class S>
void StorageKernels<S>::embedding_backward(float* dwte, float* dwpe, const S* dout, const std::int32_t* tokens,
                                           i64 B, i64 T, i64 C) {
  const CallRecord record(recorder_, "embedding_backward", {B, T, C},
                          embedding_backward_work(B, T, C, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->embedding_backward(dwte, dwpe, dout, tokens, B, T, C);
  Widened<S> w(*k_, scratch_.get());
  k_->embedding_backward(dwte, dwpe, w.in(dout, B * T * C), tokens, B, T, C);
}

template <class S>
void StorageKernels<S>::layernorm_forward(S* out, float* mean, float* rstd, const S* inp, const S* weight,
                                          const S* bias, i64 N, i64 C) {
  const CallRecord record(recorder_, "layernorm_forward", {N, C}, layernorm_forward_work(N, C, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->layernorm_forward(w.out(out, N * C), mean, rstd, w.in(inp, N * C), w.in(weight, C), w.in(bias, C), N, C);
}

template <class S>
void StorageKernels<S>::layernorm_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp,
                                           const S* weight, const float* mean, const float* rstd, i64 N, i64 C) {
  const CallRecord record(recorder_, "layernorm_backward", {N, C}, layernorm_backward_work(N, C, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->layernorm_backward(w.inout(dinp, N * C), dweight, dbias, w.in(dout, N * C), w.in(inp, N * C),
                         w.in(weight, C), mean, rstd, N, C);
}

template <class S>
void StorageKernels<S>::attention_forward(S* out, S* att, const S* qkv, i64 B, i64 T, i64 C, i64 NH) {
  const CallRecord record(recorder_, "attention_forward", {B, T, C, NH},
                          attention_forward_work(B, T, C, NH, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->attention_forward(out, att, qkv, B, T, C, NH);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::attention_forward(out, att, qkv, B, T, C, NH);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->attention_forward(w.out(out, B * T * C), w.out(att, B * NH * T * T), w.in(qkv, B * T * 3 * C), B, T, C, NH);
}

template <class S>
void StorageKernels<S>::attention_backward(S* dqkv, const S* dout, const S* qkv, const S* att, i64 B, i64 T,
                                           i64 C, i64 NH) {
  const CallRecord record(recorder_, "attention_backward", {B, T, C, NH},
                          attention_backward_work(B, T, C, NH, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::attention_backward(dqkv, dout, qkv, att, B, T, C, NH);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->attention_backward(w.inout(dqkv, B * T * 3 * C), w.in(dout, B * T * C), w.in(qkv, B * T * 3 * C),
                         w.in(att, B * NH * T * T), B, T, C, NH);
}

template <class S>
void StorageKernels<S>::gelu_forward(S* out, const S* inp, i64 N) {
  const CallRecord record(recorder_, "gelu_forward", {N}, gelu_forward_work(N, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->gelu_forward(out, inp, N);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::gelu_forward(out, inp, N);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->gelu_forward(w.out(out, N), w.in(inp, N), N);
}

template <class S>
void StorageKernels<S>::gelu_backward(S* dinp, const S* inp, const S* dout, i64 N) {
  const CallRecord record(recorder_, "gelu_backward", {N}, gelu_backward_work(N, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->gelu_backward(dinp, inp, dout, N);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::gelu_backward(dinp, inp, dout, N);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->gelu_backward(w.inout(dinp, N), w.in(inp, N), w.in(dout, N), N);
}

template <class S>
void StorageKernels<S>::residual_forward(S* out, const S* a, const S* b, i64 N) {
  const CallRecord record(recorder_, "residual_forward", {N}, residual_forward_work(N, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->residual_forward(out, a, b, N);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::residual_forward(out, a, b, N);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->residual_forward(w.out(out, N), w.in(a, N), w.in(b, N), N);
}

template <class S>
void StorageKernels<S>::residual_backward(S* da, S* db, const S* dout, i64 N) {
  const CallRecord record(recorder_, "residual_backward", {N}, residual_backward_work(N, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->residual_backward(da, db, dout, N);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::residual_backward(da, db, dout, N);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->residual_backward(w.inout(da, N), w.inout(db, N), w.in(dout, N), N);
}

template <class S>
void StorageKernels<S>::crossentropy_forward(float* losses, S* probs, const S* logits, const std::int32_t* targets,
                                             i64 BT, i64 V) {
  const CallRecord record(recorder_, "crossentropy_forward", {BT, V},
                          crossentropy_forward_work(BT, V, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->crossentropy_forward(losses, probs, logits, targets, BT, V);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::crossentropy_forward(losses, probs, logits, targets, BT, V);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->crossentropy_forward(losses, w.out(probs, BT * V), w.in(logits, BT * V), targets, BT, V);
}

template <class S>
void StorageKernels<S>::crossentropy_backward(S* dlogits, const S* probs, const std::int32_t* targets,
                                              const float* dlosses, i64 BT, i64 V) {
  const CallRecord record(recorder_, "crossentropy_backward", {BT, V},
                          crossentropy_backward_work(BT, V, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if (native_) return native_->crossentropy_backward(dlogits, probs, targets, dlosses, BT, V);
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::crossentropy_backward(dlogits, probs, targets, dlosses, BT, V);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->crossentropy_backward(w.inout(dlogits, BT * V), w.in(probs, BT * V), targets, dlosses, BT, V);
}

template <class S>
void StorageKernels<S>::embedding_shard_forward(S* out, const std::int32_t* tokens, const S* wte, const S* wpe,
                                                i64 vocab_begin, i64 V, i64 B, i64 T, i64 C) {
  const CallRecord record(recorder_, "embedding_shard_forward", {V, B, T, C},
                          embedding_shard_forward_work(V, B, T, C, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->embedding_shard_forward(w.out(out, B * T * C), tokens, w.in(wte, V * C), w.in(wpe, T * C), vocab_begin, V,
                              B, T, C);
}

template <class S>
void StorageKernels<S>::embedding_shard_backward(float* dwte, float* dwpe, const S* dout,
                                                 const std::int32_t* tokens, i64 vocab_begin, i64 V, i64 B, i64 T,
                                                 i64 C) {
  const CallRecord record(recorder_, "embedding_shard_backward", {V, B, T, C},
                          embedding_shard_backward_work(V, B, T, C, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->embedding_shard_backward(dwte, dwpe, w.in(dout, B * T * C), tokens, vocab_begin, V, B, T, C);
}

template <class S>
void StorageKernels<S>::crossentropy_shard_max(float* row_max, const S* logits, i64 BT, i64 V) {
  const CallRecord record(recorder_, "crossentropy_shard_max", {BT, V},
                          crossentropy_shard_max_work(BT, V, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->crossentropy_shard_max(row_max, w.in(logits, BT * V), BT, V);
}

template <class S>
void StorageKernels<S>::crossentropy_shard_partials(float* sumexp, float* target_logit, const S* logits,
                                                    const float* row_max, const std::int32_t* targets,
                                                    i64 vocab_begin, i64 BT, i64 V) {
  const CallRecord record(recorder_, "crossentropy_shard_partials", {BT, V},
                          crossentropy_shard_partials_work(BT, V, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->crossentropy_shard_partials(sumexp, target_logit, w.in(logits, BT * V), row_max, targets, vocab_begin, BT,
                                  V);
}

template <class S>
void StorageKernels<S>::crossentropy_shard_finish(float* losses, S* probs, const S* logits, const float* row_max,
                                                  const float* sumexp, const float* target_logit, i64 BT, i64 V) {
  const CallRecord record(recorder_, "crossentropy_shard_finish", {BT, V},
                          crossentropy_shard_finish_work(BT, V, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->crossentropy_shard_finish(losses, w.out(probs, BT * V), w.in(logits, BT * V), row_max, sumexp, target_logit,
                                BT, V);
}

template <class S>
void StorageKernels<S>::crossentropy_shard_backward(S* dlogits, const S* probs, const std::int32_t* targets,
                                                    const float* dlosses, i64 vocab_begin, i64 BT, i64 V) {
  const CallRecord record(recorder_, "crossentropy_shard_backward", {BT, V},
                          crossentropy_shard_backward_work(BT, V, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->crossentropy_shard_backward(w.inout(dlogits, BT * V), w.in(probs, BT * V), targets, dlosses, vocab_begin, BT,
                                  V);
}

template <class S>
void StorageKernels<S>::conv2d_forward(S* out, const S* inp, const S* weight, const S* bias, i64 N, i64 C, i64 H,
                                       i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad) {
  const CallRecord record(recorder_, "conv2d_forward", {N, C, H, W, OC, KH, KW, stride, pad},
                          conv2d_forward_work(N, C, H, W, OC, KH, KW, stride, pad, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  const bool onednn = onednn_conv_ && N > 0;
  if constexpr (std::is_same_v<S, bf16>) {
    if (onednn && native_conv_)
      return onednn_conv_->forward(out, inp, weight, bias, N, C, H, W, OC, KH, KW, stride, pad);
  }
  if constexpr (std::is_same_v<S, fp16>) {
    if (onednn && onednn_conv_->forward(out, inp, weight, bias, N, C, H, W, OC, KH, KW, stride, pad)) return;
  }
  const i64 OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  Widened<S> w(*k_, scratch_.get());
  float* o = w.out(out, N * OC * OH * OW);
  const float *i = w.in(inp, N * C * H * W), *wt = w.in(weight, OC * C * KH * KW), *b = w.in(bias, OC);
  if (onednn) return onednn_conv_->forward(o, i, wt, b, N, C, H, W, OC, KH, KW, stride, pad);
  k_->conv2d_forward(o, i, wt, b, N, C, H, W, OC, KH, KW, stride, pad);
}

template <class S>
void StorageKernels<S>::conv2d_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp,
                                        const S* weight, i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW,
                                        i64 stride, i64 pad) {
  const CallRecord record(recorder_, dinp ? "conv2d_backward" : "conv2d_backward_weight",
                          {N, C, H, W, OC, KH, KW, stride, pad},
                          conv2d_backward_work(N, C, H, W, OC, KH, KW, stride, pad, dinp != nullptr, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  const bool onednn = onednn_conv_ && N > 0;
  if constexpr (std::is_same_v<S, bf16>) {
    if (onednn && native_conv_)
      return onednn_conv_->backward(dinp, dweight, dbias, dout, inp, weight, N, C, H, W, OC, KH, KW, stride, pad);
  }
  if constexpr (std::is_same_v<S, fp16>) {
    if (onednn && onednn_conv_->backward(dinp, dweight, dbias, dout, inp, weight, N, C, H, W, OC, KH, KW, stride, pad))
      return;
  }
  const i64 OH = (H + 2 * pad - KH) / stride + 1, OW = (W + 2 * pad - KW) / stride + 1;
  Widened<S> w(*k_, scratch_.get());
  float* di = w.inout(dinp, N * C * H * W);
  const float *d = w.in(dout, N * OC * OH * OW), *i = w.in(inp, N * C * H * W), *wt = w.in(weight, OC * C * KH * KW);
  if (onednn) return onednn_conv_->backward(di, dweight, dbias, d, i, wt, N, C, H, W, OC, KH, KW, stride, pad);
  k_->conv2d_backward(di, dweight, dbias, d, i, wt, N, C, H, W, OC, KH, KW, stride, pad);
}

template <class S>
void StorageKernels<S>::batchnorm2d_channel_sums(double* sums, const S* inp, i64 N, i64 C, i64 HW) {
  const CallRecord record(recorder_, "batchnorm2d_channel_sums", {N, C, HW},
                          batchnorm2d_channel_sums_work(N, C, HW, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::batchnorm2d_channel_sums(sums, inp, N, C, HW);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->batchnorm2d_channel_sums(sums, w.in(inp, N * C * HW), N, C, HW);
}

template <class S>
void StorageKernels<S>::batchnorm2d_statistics(float* mean, float* rstd, float* running_mean, float* running_var,
                                               const double* sums, double count, i64 C, double momentum,
                                               double eps) {
  const CallRecord record(recorder_, "batchnorm2d_statistics", {C}, batchnorm2d_statistics_work(C));
  if (record.skips_kernel()) return;
  k_->batchnorm2d_statistics(mean, rstd, running_mean, running_var, sums, count, C, momentum, eps);
}

template <class S>
void StorageKernels<S>::batchnorm2d_forward_apply(S* out, const S* inp, const float* mean, const float* rstd,
                                                  const S* weight, const S* bias, const S* residual, bool relu,
                                                  i64 N, i64 C, i64 HW) {
  const CallRecord record(recorder_, "batchnorm2d_forward_apply", {N, C, HW, residual ? 1 : 0, relu ? 1 : 0},
                          batchnorm2d_forward_apply_work(N, C, HW, residual != nullptr, relu, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_)
      return cpu::batchnorm2d_forward_apply(out, inp, mean, rstd, weight, bias, residual, relu, N, C, HW);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->batchnorm2d_forward_apply(w.out(out, N * C * HW), w.in(inp, N * C * HW), mean, rstd, w.in(weight, C),
                                w.in(bias, C), w.in(residual, N * C * HW), relu, N, C, HW);
}

template <class S>
void StorageKernels<S>::batchnorm2d_backward_sums(double* sums, float* dweight, float* dbias, const S* dout,
                                                  const S* relu_out, const S* inp, const float* mean,
                                                  const float* rstd, i64 N, i64 C, i64 HW) {
  const CallRecord record(recorder_, "batchnorm2d_backward_sums", {N, C, HW},
                          batchnorm2d_backward_sums_work(N, C, HW, relu_out != nullptr, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_)
      return cpu::batchnorm2d_backward_sums(sums, dweight, dbias, dout, relu_out, inp, mean, rstd, N, C, HW);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->batchnorm2d_backward_sums(sums, dweight, dbias, w.in(dout, N * C * HW), w.in(relu_out, N * C * HW),
                                w.in(inp, N * C * HW), mean, rstd, N, C, HW);
}

template <class S>
void StorageKernels<S>::batchnorm2d_backward_apply(S* dinp, const S* dout, const S* relu_out, const S* inp,
                                                   const S* weight, const float* mean, const float* rstd,
                                                   const double* sums, double count, i64 N, i64 C, i64 HW) {
  const CallRecord record(recorder_, "batchnorm2d_backward_apply", {N, C, HW},
                          batchnorm2d_backward_apply_work(N, C, HW, relu_out != nullptr, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_)
      return cpu::batchnorm2d_backward_apply(dinp, dout, relu_out, inp, weight, mean, rstd, sums, count, N, C, HW);
  }
  Widened<S> w(*k_, scratch_.get());  // dinp is overwritten
  k_->batchnorm2d_backward_apply(w.out(dinp, N * C * HW), w.in(dout, N * C * HW), w.in(relu_out, N * C * HW),
                                 w.in(inp, N * C * HW), w.in(weight, C), mean, rstd, sums, count, N, C, HW);
}

template <class S>
void StorageKernels<S>::relu_backward(S* dinp, const S* out, const S* dout, i64 N) {
  const CallRecord record(recorder_, "relu_backward", {N}, relu_backward_work(N, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  if constexpr (!std::is_same_v<S, float>) {
    if (host_sixteen_bit_) return cpu::relu_backward(dinp, out, dout, N);
  }
  Widened<S> w(*k_, scratch_.get());
  k_->relu_backward(w.inout(dinp, N), w.in(out, N), w.in(dout, N), N);
}

template <class S>
void StorageKernels<S>::global_avgpool_forward(S* out, const S* inp, i64 N, i64 C, i64 HW) {
  const CallRecord record(recorder_, "global_avgpool_forward", {N, C, HW},
                          global_avgpool_forward_work(N, C, HW, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->global_avgpool_forward(w.out(out, N * C), w.in(inp, N * C * HW), N, C, HW);
}

template <class S>
void StorageKernels<S>::global_avgpool_backward(S* dinp, const S* dout, i64 N, i64 C, i64 HW) {
  const CallRecord record(recorder_, "global_avgpool_backward", {N, C, HW},
                          global_avgpool_backward_work(N, C, HW, kStorageBytes<S>));
  if (record.skips_kernel()) return;
  Widened<S> w(*k_, scratch_.get());
  k_->global_avgpool_backward(w.inout(dinp, N * C * HW), w.in(dout, N * C), N, C, HW);
}

template class StorageKernels<float>;
template class StorageKernels<bf16>;
template class StorageKernels<fp16>;

}  // namespace sb::kernels
