// SPDX-License-Identifier: Apache-2.0
// gather_text over point-to-point messages: the length first, then the bytes.
#include "parallel/gather_text.hpp"

#include <cstdint>

namespace sb::parallel {

std::vector<std::string> gather_text(Communicator& comm, const std::string& text, int root) {
  constexpr int kLengthTag = 7301, kTextTag = 7302;
  std::vector<std::string> all;
  if (comm.rank() != root) {
    const auto length = static_cast<std::int64_t>(text.size());
    comm.send(&length, 1, DataType::i64, root, kLengthTag);
    if (length > 0) comm.send(text.data(), length, DataType::u8, root, kTextTag);
    return all;
  }
  all.resize(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    if (r == root) {
      all[static_cast<std::size_t>(r)] = text;
      continue;
    }
    std::int64_t length = 0;
    comm.recv(&length, 1, DataType::i64, r, kLengthTag);
    std::string& received = all[static_cast<std::size_t>(r)];
    received.resize(static_cast<std::size_t>(length));
    if (length > 0) comm.recv(received.data(), length, DataType::u8, r, kTextTag);
  }
  return all;
}

}  // namespace sb::parallel
