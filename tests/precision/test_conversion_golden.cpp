// SPDX-License-Identifier: Apache-2.0
// float -> bf16 and float -> fp16 against an independent reference: tests/precision/
// conversion_golden.h5, written by make_conversion_golden.py with PyTorch (.to(torch.bfloat16))
// and NumPy (.astype(np.float16)), both round to nearest even. Every value is compared bit for
// bit, except NaN, where both sides must be NaN (torch and NumPy treat payloads differently).
// Leaves out the 16-bit -> float direction (exact; test_bf16.cpp, test_fp16.cpp).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/h5_check.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"
#include "tests/precision/bits_support.hpp"

namespace sb {
namespace {

std::string golden_path() { return std::string(SB_SOURCE_DIR) + "/tests/precision/conversion_golden.h5"; }

template <class T>
std::vector<T> read_dataset(hid_t file, const char* name, hid_t memory_type) {
  io::H5Handle dataset(SB_H5_CHECK(H5Dopen2(file, name, H5P_DEFAULT)), H5Dclose);
  io::H5Handle space(SB_H5_CHECK(H5Dget_space(dataset.get())), H5Sclose);
  const hssize_t count = SB_H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
  std::vector<T> values(static_cast<std::size_t>(count));
  SB_H5_CHECK(H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  return values;
}

class ConversionGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    io::H5Handle file(SB_H5_CHECK(H5Fopen(golden_path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)),
                      H5Fclose);
    input_ = read_dataset<std::uint32_t>(file.get(), "input", H5T_NATIVE_UINT32);
    torch_bf16_ = read_dataset<std::uint16_t>(file.get(), "bf16", H5T_NATIVE_UINT16);
    numpy_fp16_ = read_dataset<std::uint16_t>(file.get(), "fp16", H5T_NATIVE_UINT16);
    class_ = read_dataset<std::uint8_t>(file.get(), "class", H5T_NATIVE_UINT8);
  }
  static inline std::vector<std::uint32_t> input_;
  static inline std::vector<std::uint16_t> torch_bf16_, numpy_fp16_;
  static inline std::vector<std::uint8_t> class_;
};

TEST_F(ConversionGolden, FileHoldsEveryGroup) {
  ASSERT_GE(input_.size(), 1'000'000u);
  ASSERT_EQ(torch_bf16_.size(), input_.size());
  ASSERT_EQ(numpy_fp16_.size(), input_.size());
  ASSERT_EQ(class_.size(), input_.size());
  std::vector<std::size_t> per_class(6, 0);
  for (std::uint8_t c : class_) {
    ASSERT_LT(c, per_class.size());
    ++per_class[c];
  }
  for (std::size_t c = 0; c < per_class.size(); ++c) EXPECT_GT(per_class[c], 0u) << "class " << c;
}

TEST_F(ConversionGolden, Bf16MatchesPyTorch) {
  std::size_t mismatches = 0, nans = 0;
  for (std::size_t i = 0; i < input_.size(); ++i) {
    const float x = testing::float_from_bits(input_[i]);
    const bf16 ours = to_bf16(x);
    const bf16 torch = bf16::from_bits(torch_bf16_[i]);
    if (std::isnan(x)) {
      ++nans;
      if (std::isnan(to_float(ours)) && std::isnan(to_float(torch))) continue;
    } else if (ours.bits == torch.bits) {
      continue;
    }
    if (++mismatches <= 10)
      ADD_FAILURE() << std::hex << "input 0x" << input_[i] << " (class " << std::dec << int(class_[i])
                    << std::hex << "): ours 0x" << ours.bits << ", torch 0x" << torch.bits;
  }
  EXPECT_EQ(mismatches, 0u) << "of " << input_.size() << " values";
  EXPECT_GT(nans, 10u);
}

TEST_F(ConversionGolden, Fp16MatchesNumPy) {
  std::size_t mismatches = 0, nans = 0;
  for (std::size_t i = 0; i < input_.size(); ++i) {
    const float x = testing::float_from_bits(input_[i]);
    const fp16 ours = to_fp16(x);
    const fp16 numpy = fp16::from_bits(numpy_fp16_[i]);
    if (std::isnan(x)) {
      ++nans;
      if (std::isnan(to_float(ours)) && std::isnan(to_float(numpy))) continue;
    } else if (ours.bits == numpy.bits) {
      continue;
    }
    if (++mismatches <= 10)
      ADD_FAILURE() << std::hex << "input 0x" << input_[i] << " (class " << std::dec << int(class_[i])
                    << std::hex << "): ours 0x" << ours.bits << ", numpy 0x" << numpy.bits;
  }
  EXPECT_EQ(mismatches, 0u) << "of " << input_.size() << " values";
  EXPECT_GT(nans, 10u);
}

}  // namespace
}  // namespace sb
