// SPDX-License-Identifier: Apache-2.0
// H5Ocopy of one run group between result files.
#include "io/copy_run.hpp"

#include <hdf5.h>

#include "core/check.hpp"
#include "io/h5_check.hpp"
#include "io/h5_file_close.hpp"
#include "io/results_file.hpp"

namespace sb::io {

void copy_run(const std::filesystem::path& from, const std::filesystem::path& to,
              const std::string& run_id) {
  { ResultsFile::open_or_create(to); }  // root attributes and /runs
  H5QuietErrors quiet;
  const H5Handle src{H5Fopen(from.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), h5_close_file};
  SB_USER_CHECK(src, "cannot open result file '{}'", from.string());
  // a write that fails (a full disk) is a StorageError naming the file; the close cannot fail after it
  const H5Handle dst{H5Fopen(to.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), h5_close_file};
  SB_USER_CHECK(dst, "cannot open result file '{}' for writing", to.string());
  const std::string path = "/runs/" + run_id;
  if (SB_H5_CHECK(H5Lexists(dst.get(), path.c_str(), H5P_DEFAULT)) > 0)
    SB_H5_CHECK(H5Ldelete(dst.get(), path.c_str(), H5P_DEFAULT));
  SB_H5_CHECK(H5Ocopy(src.get(), path.c_str(), dst.get(), path.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  SB_H5_CHECK(H5Fflush(dst.get(), H5F_SCOPE_GLOBAL));
}

}  // namespace sb::io
