// SPDX-License-Identifier: Apache-2.0
// Disk space held back for a writer's last words: a file of a fixed size beside the file being
// written, allocated up front and removed when the writer is done. When the disk fills, the
// writer releases it and records the failure in the space it held (the result file's status
// `failed` and the reason). Leaves out what is written into that space.
#pragma once

#include <cstdint>
#include <filesystem>

namespace sb {

class SpaceReserve {
 public:
  // What the result file of a training run holds back: enough for its failure record after any
  // step (the step's rows, the status and the error, HDF5's metadata).
  static constexpr std::uintmax_t kResultFileBytes = std::uintmax_t{1} << 20;

  SpaceReserve() = default;
  // Allocates `bytes` in space_reserve_path(file) (replacing a stale reserve a killed run left).
  // StorageError naming `file` when its disk cannot hold them: the writer should not start.
  SpaceReserve(const std::filesystem::path& file, std::uintmax_t bytes);
  SpaceReserve(SpaceReserve&& other) noexcept;
  SpaceReserve& operator=(SpaceReserve&& other) noexcept;
  SpaceReserve(const SpaceReserve&) = delete;
  SpaceReserve& operator=(const SpaceReserve&) = delete;
  ~SpaceReserve();

  // Frees the space now; false when nothing was held (no reserve, or released before).
  bool release() noexcept;
  bool held() const { return !path_.empty(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;  // empty when nothing is held
};

// The reserve of the file `path`: ".<name>.reserve" in its folder.
std::filesystem::path space_reserve_path(const std::filesystem::path& path);

}  // namespace sb
