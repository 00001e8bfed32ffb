// SPDX-License-Identifier: Apache-2.0
// HDF5 C API safety: SB_H5_CHECK turns a negative return into sb::Error (sb::StorageError when
// the system refused a read or write: a full disk), H5Handle closes ids by RAII, H5QuietErrors
// stops HDF5 printing its own error stack. Leaves out MPI-IO (rank 0 writes).
#pragma once

#include <hdf5.h>

#include <filesystem>
#include <string>
#include <utility>

#include "core/check.hpp"

namespace sb::io {

// The most specific description on the calling thread's HDF5 error stack (the function where
// the error was detected, e.g. "unable to lock file, errno = 11, ..."), or "" when empty.
std::string h5_error_stack_message();

// The system call failure a file driver put on the calling thread's error stack: its errno (0
// when there is none), the file it names ("" when the message names none), and whether it read.
struct H5SystemError {
  int error_number = 0;
  std::string path;
  bool reading = false;
};
H5SystemError h5_system_error();

[[noreturn]] void throw_h5_failure(const char* call, const char* file, int line);

// After a failed H5Fcreate of `path`: a StorageError naming the file and the errno a file
// driver reported (a full disk), else a UserError "cannot create <what><path>: <HDF5's reason>".
[[noreturn]] void throw_h5_create_failure(const std::filesystem::path& path, const std::string& what);

template <class T>
T h5_check(T value, const char* call, const char* file, int line) {
  if (value < 0) throw_h5_failure(call, file, line);
  return value;
}

// Owns one hid_t and the function that closes it (H5Fclose, H5Gclose, H5Dclose, H5Tclose,
// H5Sclose, H5Pclose, H5Aclose). Move-only; closing errors in the destructor are ignored.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  H5Handle() = default;
  H5Handle(hid_t id, Closer close) noexcept : id_(id), close_(close) {}
  H5Handle(H5Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  H5Handle& operator=(H5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  ~H5Handle() { reset(); }

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  void reset() noexcept {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// While alive, HDF5 does not print its error stack to stderr (the stack is still recorded,
// and SB_H5_CHECK quotes it): users see one sentence, not forty lines. Restores the previous
// handler on destruction, so nothing outside scalebench's io calls is affected.
class H5QuietErrors {
 public:
  H5QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &saved_function_, &saved_data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  H5QuietErrors(const H5QuietErrors&) = delete;
  H5QuietErrors& operator=(const H5QuietErrors&) = delete;
  ~H5QuietErrors() { H5Eset_auto2(H5E_DEFAULT, saved_function_, saved_data_); }

 private:
  H5E_auto2_t saved_function_ = nullptr;
  void* saved_data_ = nullptr;
};

}  // namespace sb::io

// Evaluates an HDF5 call once and returns its value; a negative value throws sb::Error
// "HDF5: <stack message> (call `<call>` failed at file:line, rank R on HOST)", or, when a
// system call failed underneath, sb::StorageError "cannot write the HDF5 file F: no space left
// on device (ENOSPC); ... (HDF5 <call> at file:line, rank R on HOST)".
#define SB_H5_CHECK(call) ::sb::io::h5_check((call), #call, __FILE__, __LINE__)
