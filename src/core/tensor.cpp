// SPDX-License-Identifier: Apache-2.0
// Shapes, strides and dtype sizes.
#include "core/tensor.hpp"

#include <fmt/format.h>

namespace sb {

std::int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::u8: return 1;
  }
  return 0;
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::f32: return "fp32";
    case DType::f64: return "fp64";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::i32: return "int32";
    case DType::u8: return "uint8";
  }
  return "unknown";
}

std::string_view to_string(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  SB_CHECK(dims.size() <= kMaxTensorRank, "rank {} exceeds the maximum {}", dims.size(),
           kMaxTensorRank);
  for (auto d : dims) {
    SB_CHECK(d >= 0, "negative dimension {}", d);
    dims_[static_cast<std::size_t>(rank_++)] = d;
  }
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[static_cast<std::size_t>(i)] != other.dims_[static_cast<std::size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank_; ++i) s += fmt::format("{}{}", i ? ", " : "", dims_[static_cast<std::size_t>(i)]);
  return s + ")";
}

Tensor::Tensor(void* data, Shape shape, DType dtype, Device device)
    : data_(data), shape_(shape), dtype_(dtype), device_(device) {
  std::int64_t stride = 1;
  for (int i = shape_.rank() - 1; i >= 0; --i) {
    strides_[static_cast<std::size_t>(i)] = stride;
    stride *= shape_[i];
  }
}

Tensor::Tensor(void* data, Shape shape, std::array<std::int64_t, kMaxTensorRank> strides,
               DType dtype, Device device)
    : data_(data), shape_(shape), strides_(strides), dtype_(dtype), device_(device) {}

bool Tensor::is_contiguous() const {
  std::int64_t stride = 1;
  for (int i = shape_.rank() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[static_cast<std::size_t>(i)] != stride) return false;
    stride *= shape_[i];
  }
  return true;
}

}  // namespace sb
