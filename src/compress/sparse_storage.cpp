// SPDX-License-Identifier: Apache-2.0
// Encoding and decoding of the stored layouts (see sparse_storage.hpp).
#include "compress/sparse_storage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/check.hpp"

namespace sb::compress {

namespace {

using i64 = std::int64_t;

template <class T>
i64 bytes_of(const std::vector<T>& v) {
  return static_cast<i64>(v.size() * sizeof(T));
}

void encode_csr(StoredTensor& t, const float* dense) {
  const bool narrow = t.cols <= 65536;
  t.row_start.assign(static_cast<std::size_t>(t.rows + 1), 0);
  for (i64 r = 0; r < t.rows; ++r) {
    for (i64 c = 0; c < t.cols; ++c) {
      const float v = dense[r * t.cols + c];
      if (v == 0.0f) continue;
      t.values.push_back(v);
      if (narrow)
        t.col16.push_back(static_cast<std::uint16_t>(c));
      else
        t.col32.push_back(static_cast<std::uint32_t>(c));
    }
    SB_CHECK(t.values.size() <= 0x7fffffffu, "'{}': more nonzeros than int32 row starts hold", t.name);
    t.row_start[static_cast<std::size_t>(r + 1)] = static_cast<std::int32_t>(t.values.size());
  }
}

void encode_bitmap(StoredTensor& t, const float* dense) {
  t.index_bits.assign(static_cast<std::size_t>((t.numel() + 7) / 8), 0);
  for (i64 i = 0; i < t.numel(); ++i) {
    if (dense[i] == 0.0f) continue;
    t.index_bits[static_cast<std::size_t>(i / 8)] |= static_cast<std::uint8_t>(1u << (i % 8));
    t.values.push_back(dense[i]);
  }
}

// Per group of four: two positions (the nonzeros', padded with unused positions holding zero
// values) and their two values.
void encode_two_of_four(StoredTensor& t, const float* dense) {
  const i64 groups = t.numel() / 4;
  t.index_bits.assign(static_cast<std::size_t>((groups + 1) / 2), 0);
  for (i64 g = 0; g < groups; ++g) {
    const float* w = dense + 4 * g;
    std::array<int, 2> kept{};
    int n = 0;
    for (int i = 0; i < 4 && n < 2; ++i)
      if (w[i] != 0.0f) kept[n++] = i;
    for (int i = 0; n < 2; ++i)  // fewer than two nonzeros: pad with zero positions not yet taken
      if (w[i] == 0.0f && (n == 0 || kept[0] != i)) kept[n++] = i;
    std::sort(kept.begin(), kept.end());
    const auto nibble = static_cast<std::uint8_t>(kept[0] | (kept[1] << 2));
    t.index_bits[static_cast<std::size_t>(g / 2)] |= static_cast<std::uint8_t>(nibble << (4 * (g % 2)));
    t.values.push_back(w[kept[0]]);
    t.values.push_back(w[kept[1]]);
  }
}

void decode_csr(const StoredTensor& t, float* dense) {
  for (i64 r = 0; r < t.rows; ++r)
    for (std::int32_t j = t.row_start[static_cast<std::size_t>(r)]; j < t.row_start[static_cast<std::size_t>(r + 1)];
         ++j) {
      const auto k = static_cast<std::size_t>(j);
      const i64 c = t.col16.empty() ? static_cast<i64>(t.col32[k]) : static_cast<i64>(t.col16[k]);
      dense[r * t.cols + c] = t.values[k];
    }
}

void decode_bitmap(const StoredTensor& t, float* dense) {
  std::size_t next = 0;
  for (i64 i = 0; i < t.numel(); ++i)
    if (t.index_bits[static_cast<std::size_t>(i / 8)] >> (i % 8) & 1u) dense[i] = t.values[next++];
}

void decode_two_of_four(const StoredTensor& t, float* dense) {
  for (i64 g = 0; g < t.numel() / 4; ++g) {
    const unsigned nibble = t.index_bits[static_cast<std::size_t>(g / 2)] >> (4 * (g % 2)) & 0xfu;
    dense[4 * g + (nibble & 3u)] = t.values[static_cast<std::size_t>(2 * g)];
    dense[4 * g + (nibble >> 2)] = t.values[static_cast<std::size_t>(2 * g + 1)];
  }
}

}  // namespace

const char* to_string(SparseLayout layout) {
  switch (layout) {
    case SparseLayout::dense: return "dense";
    case SparseLayout::two_of_four: return "two_of_four";
    case SparseLayout::csr: return "csr";
    case SparseLayout::bitmap: return "bitmap";
  }
  return "?";
}

i64 StoredTensor::bytes() const {
  return bytes_of(values) + bytes_of(row_start) + bytes_of(col16) + bytes_of(col32) + bytes_of(index_bits);
}

std::vector<float> StoredTensor::to_dense() const {
  std::vector<float> dense(static_cast<std::size_t>(numel()), 0.0f);
  switch (layout) {
    case SparseLayout::dense: dense = values; break;
    case SparseLayout::two_of_four: decode_two_of_four(*this, dense.data()); break;
    case SparseLayout::csr: decode_csr(*this, dense.data()); break;
    case SparseLayout::bitmap: decode_bitmap(*this, dense.data()); break;
  }
  return dense;
}

bool two_of_four_fits(const float* dense, i64 rows, i64 cols) {
  if (cols % 4 != 0) return false;
  for (i64 g = 0; g < rows * cols; g += 4)
    if (std::count_if(dense + g, dense + g + 4, [](float v) { return v != 0.0f; }) > 2) return false;
  return true;
}

StoredTensor encode(const std::string& name, const float* dense, i64 rows, i64 cols, SparseLayout layout) {
  SB_CHECK(rows > 0 && cols > 0, "tensor '{}' to store has shape ({}, {})", name, rows, cols);
  StoredTensor t{.name = name, .layout = layout, .rows = rows, .cols = cols};
  switch (layout) {
    case SparseLayout::dense: t.values.assign(dense, dense + rows * cols); break;
    case SparseLayout::two_of_four:
      SB_CHECK(two_of_four_fits(dense, rows, cols), "tensor '{}' ({}, {}) is not 2:4 sparse", name, rows, cols);
      encode_two_of_four(t, dense);
      break;
    case SparseLayout::csr: encode_csr(t, dense); break;
    case SparseLayout::bitmap: encode_bitmap(t, dense); break;
  }
  return t;
}

StoredTensor encode_smallest(const std::string& name, const float* dense, i64 rows, i64 cols) {
  StoredTensor best = encode(name, dense, rows, cols, SparseLayout::dense);
  for (SparseLayout layout : {SparseLayout::two_of_four, SparseLayout::csr, SparseLayout::bitmap}) {
    if (layout == SparseLayout::two_of_four && !two_of_four_fits(dense, rows, cols)) continue;
    StoredTensor candidate = encode(name, dense, rows, cols, layout);
    if (candidate.bytes() < best.bytes()) best = std::move(candidate);
  }
  return best;
}

i64 StoredWeights::bytes() const {
  i64 total = 0;
  for (const StoredTensor& t : tensors) total += t.bytes();
  return total;
}

i64 StoredWeights::dense_bytes() const {
  i64 total = 0;
  for (const StoredTensor& t : tensors) total += 4 * t.numel();
  return total;
}

std::string StoredWeights::layout_counts() const {
  std::string counts;
  for (SparseLayout layout :
       {SparseLayout::dense, SparseLayout::two_of_four, SparseLayout::csr, SparseLayout::bitmap}) {
    const auto n = std::count_if(tensors.begin(), tensors.end(), [&](const StoredTensor& t) { return t.layout == layout; });
    counts += fmt::format("{}{}:{}", counts.empty() ? "" : " ", to_string(layout), n);
  }
  return counts;
}

const StoredTensor& StoredWeights::at(const std::string& name) const {
  const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const StoredTensor& t) { return t.name == name; });
  SB_CHECK(it != tensors.end(), "the stored weights hold no tensor '{}'", name);
  return *it;
}

StoredWeights store_weights(std::span<const NamedTensor> tensors, std::span<const WeightMatrix> matrices) {
  StoredWeights stored;
  std::size_t matched = 0;
  for (const NamedTensor& t : tensors) {
    const auto m = std::find_if(matrices.begin(), matrices.end(), [&](const WeightMatrix& w) { return w.values == t.values; });
    if (m == matrices.end()) {
      stored.tensors.push_back(encode(t.name, t.values, 1, t.numel, SparseLayout::dense));
      continue;
    }
    SB_CHECK(m->numel() == t.numel, "weight matrix '{}' ({}, {}) over tensor '{}' of {} values", m->name, m->rows,
             m->cols, t.name, t.numel);
    stored.tensors.push_back(encode_smallest(t.name, t.values, m->rows, m->cols));
    ++matched;
  }
  SB_CHECK(matched == matrices.size(), "{} of {} weight matrices are parameter tensors", matched, matrices.size());
  return stored;
}

}  // namespace sb::compress
