// SPDX-License-Identifier: Apache-2.0
// H5Ocopy of one run group between result files.
#include "io/copy_run.hpp"

#include <hdf5.h>

#include "core/check.hpp"
#include "io/h5_check.hpp"
#include "io/results_file.hpp"

namespace sb::io {

void copy_run(const std::filesystem::path& from, const std::filesystem::path& to,
              const std::string& run_id) {
  { ResultsFile::open_or_create(to); }  // root attributes and /runs
  const hid_t src = H5Fopen(from.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  SB_USER_CHECK(src >= 0, "cannot open result file '{}'", from.string());
  const hid_t dst = H5Fopen(to.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (dst < 0) {
    H5Fclose(src);
    throw UserError(fmt::format("cannot open result file '{}' for writing", to.string()));
  }
  const std::string path = "/runs/" + run_id;
  herr_t status = 0;
  if (H5Lexists(dst, path.c_str(), H5P_DEFAULT) > 0) status = H5Ldelete(dst, path.c_str(), H5P_DEFAULT);
  if (status >= 0) status = H5Ocopy(src, path.c_str(), dst, path.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(src);
  H5Fclose(dst);
  SB_CHECK(status >= 0, "copying run '{}' from '{}' into '{}' failed", run_id, from.string(), to.string());
}

}  // namespace sb::io
