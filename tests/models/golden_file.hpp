// SPDX-License-Identifier: Apache-2.0
// Reads the PyTorch golden file written by models/gpt/make_golden.py (HDF5, float32 and
// int32 datasets, scalar attributes). Leaves out writing: the file comes from Python only.
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "io/h5_check.hpp"

namespace sb::testing {

class GoldenFile {
 public:
  explicit GoldenFile(const std::string& path)
      : file_(SB_H5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)), H5Fclose) {}

  // The dataset's dimensions.
  std::vector<std::int64_t> dims(const std::string& name) const {
    io::H5Handle dataset(SB_H5_CHECK(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT)), H5Dclose);
    io::H5Handle space(SB_H5_CHECK(H5Dget_space(dataset.get())), H5Sclose);
    const int rank = SB_H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    SB_H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
    return {dims.begin(), dims.end()};
  }

  std::vector<float> floats(const std::string& name) const {
    return read<float>(name, H5T_NATIVE_FLOAT);
  }
  std::vector<std::int32_t> ints(const std::string& name) const {
    return read<std::int32_t>(name, H5T_NATIVE_INT32);
  }

  // Scalar attributes of the root group, converted by HDF5 to the asked type.
  std::int64_t int_attribute(const std::string& name) const {
    return attribute<std::int64_t>(name, H5T_NATIVE_INT64);
  }
  double double_attribute(const std::string& name) const {
    return attribute<double>(name, H5T_NATIVE_DOUBLE);
  }

 private:
  template <class T>
  T attribute(const std::string& name, hid_t memory_type) const {
    T value{};
    io::H5Handle attribute(SB_H5_CHECK(H5Aopen(file_.get(), name.c_str(), H5P_DEFAULT)), H5Aclose);
    SB_H5_CHECK(H5Aread(attribute.get(), memory_type, &value));
    return value;
  }

  template <class T>
  std::vector<T> read(const std::string& name, hid_t memory_type) const {
    std::int64_t count = 1;
    for (const auto d : dims(name)) count *= d;
    std::vector<T> values(static_cast<std::size_t>(count));
    io::H5Handle dataset(SB_H5_CHECK(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT)), H5Dclose);
    SB_H5_CHECK(H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
    return values;
  }

  io::H5Handle file_;
};

// The golden tests' error of a tensor: max |ours - torch| / max |torch|, one number per
// tensor, robust to entries near zero where an element-wise relative error means nothing.
inline double relative_error(std::span<const float> ours, std::span<const float> torch) {
  double max_diff = 0.0, max_ref = 0.0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(ours[i]) - torch[i]));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(torch[i])));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

// Compares every parameter gradient of a model (views with name, grad, numel) with the
// file's grads/<name>, reports each error through `check`; returns the worst (name, error).
template <class ParameterViews>
std::pair<std::string, double> compare_gradients(const GoldenFile& golden, const ParameterViews& views,
                                                 const std::function<void(const std::string&, double)>& check) {
  std::pair<std::string, double> worst{"", 0.0};
  for (const auto& view : views) {
    const std::vector<float> torch_grad = golden.floats("grads/" + view.name);
    if (static_cast<std::int64_t>(torch_grad.size()) != view.numel) {
      check("grad " + view.name + " (size differs from the golden file)", 1.0);
      continue;
    }
    const double error = relative_error({view.grad, torch_grad.size()}, torch_grad);
    check("grad " + view.name, error);
    if (error >= worst.second) worst = {view.name, error};
  }
  return worst;
}

}  // namespace sb::testing
