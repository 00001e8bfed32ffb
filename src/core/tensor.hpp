// SPDX-License-Identifier: Apache-2.0
// A tensor is a typed, shaped, strided view of memory owned elsewhere (a TrackedBuffer).
// Leaves out ownership, autograd and broadcasting: models own their buffers and call
// kernels explicitly, llm.c style.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "core/check.hpp"

namespace sb {

enum class DType : int { f32, f64, f16, bf16, i32, u8 };
enum class Device : int { cpu, cuda };

std::int64_t dtype_bytes(DType dtype);
std::string_view to_string(DType dtype);
std::string_view to_string(Device device);

inline constexpr int kMaxTensorRank = 6;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  int rank() const { return rank_; }
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const;
  bool operator==(const Shape& other) const;
  std::string str() const;  // "(B=4, T=64)" style without names: "(4, 64)"

 private:
  std::array<std::int64_t, kMaxTensorRank> dims_{};
  int rank_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(void* data, Shape shape, DType dtype, Device device = Device::cpu);
  Tensor(void* data, Shape shape, std::array<std::int64_t, kMaxTensorRank> strides, DType dtype,
         Device device);

  const Shape& shape() const { return shape_; }
  std::int64_t dim(int i) const { return shape_[i]; }
  std::int64_t stride(int i) const { return strides_[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const { return shape_.numel(); }
  std::int64_t bytes() const { return numel() * dtype_bytes(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool is_contiguous() const;
  void* raw() const { return data_; }

  // Typed access with a dtype check, e.g. t.data<float>().
  template <class T>
  T* data() const;

 private:
  void* data_ = nullptr;
  Shape shape_;
  std::array<std::int64_t, kMaxTensorRank> strides_{};
  DType dtype_ = DType::f32;
  Device device_ = Device::cpu;
};

template <class T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::u8; }

template <class T>
T* Tensor::data() const {
  SB_CHECK(dtype_ == dtype_of<T>(), "tensor holds {} but was read as {}", to_string(dtype_),
           to_string(dtype_of<T>()));
  return static_cast<T*>(data_);
}

}  // namespace sb
