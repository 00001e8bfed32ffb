// SPDX-License-Identifier: Apache-2.0
// Writing and reading the checkpoint layout described in checkpoint_file.hpp: float32 1-D
// datasets under one group per rank, written to "<path>.tmp-<pid>" then renamed.
#include "io/checkpoint_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "core/bounded_file.hpp"
#include "core/environment.hpp"
#include "core/check.hpp"
#include "core/storage_error.hpp"
#include "io/heap_check.hpp"
#include "io/h5_check.hpp"
#include "io/h5_file_close.hpp"
#include "io/h5_objects.hpp"

namespace sb::io {

namespace {

constexpr const char* kFormat = "scalebench-checkpoint";
constexpr std::int64_t kVersion = 1;

void pause_if_asked() {
  if (const std::int64_t pause = checkpoint_write_pause_ms(); pause > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(pause));
}

void write_floats(hid_t parent, const std::string& name, const std::vector<float>& values) {
  const hsize_t count = values.size();
  H5Handle space{SB_H5_CHECK(H5Screate_simple(1, &count, nullptr)), H5Sclose};
  H5Handle dataset{SB_H5_CHECK(H5Dcreate2(parent, name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                                          H5P_DEFAULT, H5P_DEFAULT)),
                   H5Dclose};
  if (count > 0)
    SB_H5_CHECK(H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  pause_if_asked();
}

std::vector<float> read_floats(hid_t parent, const std::string& name) {
  H5Handle dataset{SB_H5_CHECK(H5Dopen2(parent, name.c_str(), H5P_DEFAULT)), H5Dclose};
  H5Handle space{SB_H5_CHECK(H5Dget_space(dataset.get())), H5Sclose};
  SB_CHECK(H5Sget_simple_extent_ndims(space.get()) == 1, "checkpoint dataset '{}' is not 1-D", name);
  hsize_t count = 0;
  SB_H5_CHECK(H5Sget_simple_extent_dims(space.get(), &count, nullptr));
  std::vector<float> values(count);
  if (count > 0)
    SB_H5_CHECK(H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  return values;
}

std::int64_t int_attribute(hid_t object, const char* name, const std::filesystem::path& path) {
  SB_USER_CHECK(h5_has_attribute(object, name), "{} is not a complete scalebench checkpoint (no attribute {})",
                path.string(), name);
  const AttrValue v = h5_read_attribute(object, name);
  SB_USER_CHECK(std::holds_alternative<std::int64_t>(v), "{}: checkpoint attribute {} is not an integer",
                path.string(), name);
  return std::get<std::int64_t>(v);
}

// Flushes a file's (or a folder's) contents to disk; fsync is where a full disk or a network
// file system may first say that the data cannot be stored.
void sync_to_disk(const std::filesystem::path& path, bool folder) {
  const int fd = ::open(path.c_str(), folder ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw_storage_error(path, errno, "open for fsync", "open");
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) throw_storage_error(path, error, "write", "fsync");
}

// The HDF5 file at `temporary`, complete and flushed. On any failure its unwritten part is
// discarded before it is closed (a full disk must not fail the close: h5_file_close.hpp).
void write_checkpoint_file(const std::filesystem::path& temporary, const Checkpoint& checkpoint) {
  H5Handle creation{SB_H5_CHECK(H5Pcreate(H5P_FILE_CREATE)), H5Pclose};
  SB_H5_CHECK(H5Pset_attr_creation_order(creation.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  const hid_t id = H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, creation.get(), H5P_DEFAULT);
  if (id < 0) throw_h5_create_failure(temporary, "checkpoint ");
  H5Handle file{id, h5_close_file};
  try {
    h5_write_attribute(file.get(), "format", std::string(kFormat));
    h5_write_attribute(file.get(), "version", kVersion);
    h5_write_attributes(file.get(), checkpoint.attributes);
    H5Handle ranks = h5_create_group(file.get(), "ranks");
    for (const CheckpointRank& r : checkpoint.ranks) {
      H5Handle group = h5_create_group(ranks.get(), std::to_string(r.rank));
      h5_write_attributes(group.get(), {{"rank", r.rank},
                                        {"dp_rank", r.dp_rank},
                                        {"tp_rank", r.tp_rank},
                                        {"pp_rank", r.pp_rank},
                                        {"optimizer_begin", r.optimizer_begin}});
      write_floats(group.get(), "parameters", r.parameters);
      write_floats(group.get(), "untrained_state", r.untrained_state);
      H5Handle optimizer = h5_create_group(group.get(), "optimizer");
      for (const auto& [name, values] : r.optimizer) write_floats(optimizer.get(), name, values);
    }
    SB_H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
  } catch (...) {
    h5_discard_unwritten(file.get());  // the temporary is removed: nothing of it needs to reach the disk
    throw;
  }
}

}  // namespace

std::int64_t checkpoint_write_pause_ms() {
  return environment_integer("SB_CHECKPOINT_WRITE_PAUSE_MS", 0, 60'000, "milliseconds to pause after each checkpoint array")
      .value_or(0);
}

void write_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  H5QuietErrors quiet;
  const std::filesystem::path folder = path.parent_path().empty() ? "." : path.parent_path();
  SB_USER_CHECK(std::filesystem::is_directory(folder), "cannot write checkpoint {}: folder {} does not exist",
                path.string(), folder.string());
  const std::filesystem::path temporary = path.string() + fmt::format(".tmp-{}", ::getpid());
  std::error_code ignored;
  try {
    write_checkpoint_file(temporary, checkpoint);
    sync_to_disk(temporary, false);
    // atomic on POSIX: readers see old or new, never half
    if (::rename(temporary.c_str(), path.c_str()) != 0) throw_storage_error(path, errno, "write checkpoint", "rename");
    sync_to_disk(folder, true);
  } catch (const StorageError& e) {
    std::filesystem::remove(temporary, ignored);  // gives the disk its space back
    throw StorageError(path, e.error_number(), "write checkpoint", e.where(),
                       std::filesystem::exists(path, ignored) ? "the checkpoint there before is intact" : "");
  } catch (...) {
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

Checkpoint read_checkpoint(const std::filesystem::path& path,
                           const std::function<bool(const CheckpointRank& header)>& wanted) {
  H5QuietErrors quiet;
  SB_USER_CHECK(std::filesystem::exists(path), "checkpoint {} does not exist", path.string());
  require_regular_file(path, "checkpoint");  // H5Fopen on a FIFO would block
  SB_USER_CHECK(H5Fis_hdf5(path.c_str()) > 0, "{} is not an HDF5 file (so not a scalebench checkpoint)",
                path.string());
  check_heaps(path);  // before H5Fopen loads the root group's local heap or anything reads a string
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  SB_USER_CHECK(id >= 0, "cannot open checkpoint {}: {}", path.string(), h5_error_stack_message());
  H5Handle file{id, h5_close_file};
  SB_USER_CHECK(h5_has_attribute(file.get(), "format") &&
                    h5_read_attribute(file.get(), "format") == AttrValue{std::string(kFormat)},
                "{} is not a scalebench checkpoint (no format attribute '{}')", path.string(), kFormat);
  const std::int64_t version = int_attribute(file.get(), "version", path);
  SB_USER_CHECK(version == kVersion, "{} is a checkpoint of version {}; this scalebench reads version {}",
                path.string(), version, kVersion);
  Checkpoint checkpoint;
  for (auto& [name, value] : h5_read_attributes(file.get()))
    if (name != "format" && name != "version") checkpoint.attributes.emplace_back(name, std::move(value));
  SB_USER_CHECK(h5_path_exists(file.get(), "ranks"), "{} is not a complete scalebench checkpoint (no /ranks)",
                path.string());
  H5Handle ranks{SB_H5_CHECK(H5Gopen2(file.get(), "ranks", H5P_DEFAULT)), H5Gclose};
  for (const std::string& member : h5_member_names(ranks.get())) {
    H5Handle group{SB_H5_CHECK(H5Gopen2(ranks.get(), member.c_str(), H5P_DEFAULT)), H5Gclose};
    CheckpointRank r;
    r.rank = int_attribute(group.get(), "rank", path);
    r.dp_rank = int_attribute(group.get(), "dp_rank", path);
    r.tp_rank = int_attribute(group.get(), "tp_rank", path);
    r.pp_rank = int_attribute(group.get(), "pp_rank", path);
    r.optimizer_begin = int_attribute(group.get(), "optimizer_begin", path);
    if (!wanted || wanted(r)) {
      r.parameters = read_floats(group.get(), "parameters");
      r.untrained_state = read_floats(group.get(), "untrained_state");
      H5Handle optimizer{SB_H5_CHECK(H5Gopen2(group.get(), "optimizer", H5P_DEFAULT)), H5Gclose};
      for (const std::string& name : h5_member_names(optimizer.get()))
        r.optimizer.emplace_back(name, read_floats(optimizer.get(), name));
    }
    checkpoint.ranks.push_back(std::move(r));
  }
  std::sort(checkpoint.ranks.begin(), checkpoint.ranks.end(),
            [](const CheckpointRank& a, const CheckpointRank& b) { return a.rank < b.rank; });
  return checkpoint;
}

const AttrValue& checkpoint_attribute(const Checkpoint& checkpoint, const std::string& name,
                                      const std::filesystem::path& path) {
  for (const auto& [key, value] : checkpoint.attributes)
    if (key == name) return value;
  throw UserError(fmt::format("{} is not a complete scalebench checkpoint (no attribute {})", path.string(), name));
}

}  // namespace sb::io
