// SPDX-License-Identifier: Apache-2.0
// The readers of the environment, called once up front (see environment_check.hpp). Each
// variable keeps its one reader; this file only calls them early. Left out: the CUDA-only
// SB_GEMM_AUTOTUNE and local-rank variables (read when a GPU context starts, before any file),
// SB_PYTHON (report checks it before it runs), and the folders SB_SHARE_DIR, SB_DATA_DIR and
// SB_SITES_DIR (each file read from them names its path).
#include "cli/environment_check.hpp"

#include "io/checkpoint_file.hpp"
#include "train/failure_injection.hpp"
#include "train/progress.hpp"
#include "train/thread_allocation.hpp"

namespace sb::cli {

void check_environment() {
  train::progress_mode();                 // SB_PROGRESS
  train::check_thread_environment();      // OMP_NUM_THREADS, SLURM_CPUS_PER_TASK
  train::check_injection_environment();   // SB_INJECT_FAILURE, SB_INJECT_OVERFLOW
  io::checkpoint_write_pause_ms();        // SB_CHECKPOINT_WRITE_PAUSE_MS
}

}  // namespace sb::cli
