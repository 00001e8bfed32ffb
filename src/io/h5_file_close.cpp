// SPDX-License-Identifier: Apache-2.0
// h5_close_file and h5_discard_unwritten (see h5_file_close.hpp).
#include "io/h5_file_close.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include "io/h5_check.hpp"

namespace sb::io {

herr_t h5_close_file(hid_t file) {
  H5QuietErrors quiet;
  unsigned intent = 0;
  if (H5Fget_intent(file, &intent) >= 0 && (intent & H5F_ACC_RDWR) && !h5_flush_retrying(file)) {
    h5_discard_unwritten(file);
    h5_flush_retrying(file);  // into the scratch file: the close then has nothing left to write
  }
  return H5Fclose(file);
}

bool h5_flush_retrying(hid_t file) {
  H5QuietErrors quiet;
  for (int attempt = 0; attempt < 3; ++attempt)
    if (H5Fflush(file, H5F_SCOPE_LOCAL) >= 0) return true;
  return false;
}

bool h5_discard_unwritten(hid_t file) {
  H5QuietErrors quiet;
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || handle == nullptr) return false;
  int& descriptor = *static_cast<int*>(handle);  // the sec2 driver's own descriptor
  const int scratch = memfd_create("scalebench-discarded-hdf5", MFD_CLOEXEC);
  if (scratch < 0) return false;
  const bool replaced = dup2(scratch, descriptor) >= 0;
  close(scratch);
  return replaced;
}

}  // namespace sb::io
