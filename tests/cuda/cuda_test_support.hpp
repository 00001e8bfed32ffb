// SPDX-License-Identifier: Apache-2.0
// What the CUDA kernel tests share: the skip when no GPU is visible, the cuda kernel table,
// and the op descriptions of tests/kernels run on device copies of their tensors. Leaves out
// the descriptions and the tolerance table themselves (tests/kernels/op_test_harness.hpp).
#pragma once

#include <gtest/gtest.h>

#include "../kernels/op_test_harness.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/kernel_table.hpp"

namespace sb::kernels::testing {

// Every CUDA test derives from this: without a GPU it skips with one clear message.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::visible_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  }
};

// The cuda backend as a KernelTable, without the engine's dispatch (which links the cpu back-end
// and with it Kokkos, OpenBLAS and MPI, absent on a bare GPU node).
inline const KernelTable& cuda_kernels() { return cuda::cuda_kernel_table(); }

// Tag of an OpState whose tensors live on the GPU.
struct OnDevice {};

// OpState<OnDevice> answers s["x"], s.grad("x") and s.index("x") with device pointers, so an op
// description's forward/backward (templates over OpState<T>) run unchanged on the cuda table.
template <>
class OpState<OnDevice> {
 public:
  explicit OpState(const OpState<float>& host) {
    for (const auto& [name, value] : host.values) values_.emplace(name, cuda::DeviceBuffer<float>(value));
    for (const auto& [name, grad] : host.grads) grads_.emplace(name, cuda::DeviceBuffer<float>(grad));
    for (const auto& [name, index] : host.indices)
      indices_.emplace(name, cuda::DeviceBuffer<std::int32_t>(index));
  }

  float* operator[](const std::string& name) { return values_.at(name).data(); }
  float* grad(const std::string& name) { return grads_.at(name).data(); }
  const std::int32_t* index(const std::string& name) { return indices_.at(name).data(); }

  void upload_values(const OpState<float>& host) {
    for (auto& [name, buffer] : values_) buffer.upload(host.values.at(name));
  }
  // cudaMemcpy waits for the kernels on the context's (blocking) stream.
  void download_values(OpState<float>& host) const {
    for (const auto& [name, buffer] : values_) buffer.download(host.values.at(name));
  }
  void download_grads(OpState<float>& host) const {
    for (const auto& [name, buffer] : grads_) buffer.download(host.grads.at(name));
  }

 private:
  std::map<std::string, cuda::DeviceBuffer<float>> values_, grads_;
  std::map<std::string, cuda::DeviceBuffer<std::int32_t>> indices_;
};

// backend_mismatches (op_test_harness.hpp) with the actual side on the GPU: forward outputs
// and saved tensors, then backward from the reference's saved state into non-zero gradients
// (so an overwrite instead of += shows).
template <class Op, class ExpectedTable>
std::vector<Mismatch> cuda_mismatches(const Op& op, const KernelTable& cuda_table,
                                      const ExpectedTable& expected_kernels) {
  OpState<float> expected = make_state<float>(op, 1234, 1.0);
  OpState<float> actual = expected;
  OpState<OnDevice> device(expected);
  op.forward(expected_kernels, expected);
  op.forward(cuda_table, device);
  device.download_values(actual);
  std::vector<Mismatch> mismatches;
  const Tolerance forward_tol = tolerance_for(DType::f32, Op::name, Check::backend_forward);
  for (const TensorSpec& spec : op.tensors()) {
    if (spec.role == Role::input) continue;
    for (auto& m : compare(spec.name, actual.values[spec.name], expected.values[spec.name], forward_tol))
      mismatches.push_back(m);
  }
  device.upload_values(expected);
  op.backward(expected_kernels, expected);
  op.backward(cuda_table, device);
  device.download_grads(actual);
  const Tolerance backward_tol = tolerance_for(DType::f32, Op::name, Check::backend_backward);
  for (const TensorSpec& spec : op.tensors()) {
    if (spec.role != Role::input) continue;
    for (auto& m : compare("d" + spec.name, actual.grads[spec.name], expected.grads[spec.name],
                           backward_tol))
      mismatches.push_back(m);
  }
  return mismatches;
}

// repeat_mismatches on the GPU: two runs from the same state agree bit for bit.
template <class Op>
std::vector<Mismatch> cuda_repeat_mismatches(const Op& op, const KernelTable& cuda_table) {
  const OpState<float> start = make_state<float>(op, 777, 1.0);
  OpState<float> first = start, second = start;
  for (OpState<float>* result : {&first, &second}) {
    OpState<OnDevice> device(start);
    op.forward(cuda_table, device);
    op.backward(cuda_table, device);
    device.download_values(*result);
    device.download_grads(*result);
  }
  std::vector<Mismatch> mismatches;
  for (const TensorSpec& spec : op.tensors()) {
    for (auto& m : compare(spec.name, second.values[spec.name], first.values[spec.name], {0, 0}))
      mismatches.push_back(m);
    if (first.grads.count(spec.name)) {
      for (auto& m : compare("d" + spec.name, second.grads[spec.name], first.grads[spec.name], {0, 0}))
        mismatches.push_back(m);
    }
  }
  return mismatches;
}

}  // namespace sb::kernels::testing
