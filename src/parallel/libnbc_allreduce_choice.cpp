// SPDX-License-Identifier: Apache-2.0
// Sets Open MPI libnbc's iallreduce algorithm through MPI_T (see libnbc_allreduce_choice.hpp).
#include "parallel/libnbc_allreduce_choice.hpp"

#include <mpi.h>

#include <cstdlib>

namespace sb::parallel::detail {

namespace {

constexpr char kVariable[] = "coll_libnbc_iallreduce_algorithm";
constexpr int kAutomatic = 0, kRing = 1, kBinomial = 2;  // libnbc's enumeration (ompi_info)

class LibnbcAllreduceVariable {
 public:
  LibnbcAllreduceVariable() {
    if (std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm") != nullptr) return;
    int provided = 0, index = 0, count = 0, value = -1;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return;
    if (MPI_T_cvar_get_index(kVariable, &index) != MPI_SUCCESS) return;  // not Open MPI
    if (MPI_T_cvar_handle_alloc(index, nullptr, &handle_, &count) != MPI_SUCCESS) return;
    if (count != 1 || MPI_T_cvar_read(handle_, &value) != MPI_SUCCESS) return;
    if (value != kAutomatic) return;  // chosen in a params file
    current_ = value;
    usable_ = true;
  }

  void set(int algorithm) {
    if (!usable_ || algorithm == current_) return;
    if (MPI_T_cvar_write(handle_, &algorithm) == MPI_SUCCESS) {
      current_ = algorithm;
    } else {
      usable_ = false;  // e.g. a build where the variable is not settable: keep libnbc's choice
    }
  }

 private:
  MPI_T_cvar_handle handle_ = MPI_T_CVAR_HANDLE_NULL;
  int current_ = -1;
  bool usable_ = false;
};

// Created on first use, after MPI_Init; never released (the MCA variable outlives it anyway).
LibnbcAllreduceVariable& variable() {
  static LibnbcAllreduceVariable instance;
  return instance;
}

}  // namespace

void choose_libnbc_allreduce_algorithm(std::int64_t bytes) {
  variable().set(bytes >= kRingAllReduceMinBytes ? kRing : kBinomial);
}

}  // namespace sb::parallel::detail
