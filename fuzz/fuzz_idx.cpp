// SPDX-License-Identifier: Apache-2.0
// Fuzzes the IDX loader (MNIST, Fashion-MNIST; raw or gzip): the input is a 2-byte length n,
// then n bytes of the image file and the rest as the label file. A corrupt pair must end in
// sb::UserError; a pair that loads must be self-consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "data/image_dataset.hpp"
#include "fuzz_scratch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t n = std::min<std::size_t>(size - 2, (std::size_t{data[0]} << 8) | data[1]);
  const auto images = sb::fuzz::write_scratch("images-idx3-ubyte", data + 2, n);
  const auto labels = sb::fuzz::write_scratch("labels-idx1-ubyte", data + 2 + n, size - 2 - n);
  sb::fuzz::expect_only_user_errors([&] {
    const sb::data::ImageDataset d = sb::data::load_idx_images("fuzz", images, labels, 0.1307, 0.3081);
    if (static_cast<std::int64_t>(d.images.size()) != d.count * d.image_size() ||
        static_cast<std::int64_t>(d.labels.size()) != d.count)
      std::abort();
    for (const std::int32_t label : d.labels)
      if (label < 0 || label >= d.classes) std::abort();
  });
  return 0;
}
