// SPDX-License-Identifier: Apache-2.0
// The Communicator interface (communicator.hpp) for one rank per GPU: buffers in device memory
// travel through NCCL on the rank's current CUDA device, host buffers (losses, counters,
// checkpoint pieces, the trainer's bookkeeping) through the MPI communicator it wraps, so every
// strategy's code calls one communicator whatever memory a buffer lives in. NCCL's unique id
// is bootstrapped over that MPI communicator (rank 0 creates it, MPI broadcasts it); split()
// splits the MPI communicator and bootstraps a new NCCL communicator for each part. Leaves
// out the device choice (the caller sets it before: rank r of a node uses GPU r, see
// select_local_device) and CUDA-aware MPI (reported by cuda_aware_mpi, not used for traffic).
#pragma once

#include <memory>
#include <string>

#include "parallel/communicator.hpp"

namespace sb::parallel {

// Whether this build has NCCL (SB_HAVE_NCCL); when false make_nccl_communicator and
// select_local_device throw UserError saying so and how to build with NCCL; the queries
// (nccl_compiled, nccl_version, cuda_aware_mpi) answer in every build.
bool nccl_compiled();
// "2.27.7" (the library's runtime version), or "not compiled".
std::string nccl_version();
// Wraps `mpi` (its rank, size and name become this communicator's): collectives and messages
// on device pointers go through NCCL on the current CUDA device, on host pointers through
// `mpi`. Collective over `mpi`'s ranks.
// A device buffer may still be being written by kernels or copies issued earlier on a blocking
// stream (a CudaContext's, or cudaMemcpy's legacy default stream): each launch is ordered after
// them on the device, without the host waiting. Work on non-blocking streams must be finished
// by the caller. Results are in place when a blocking call returns or its request completes.
// Device calls differ from MPI's in three ways, as NCCL does:
//   * they run in issue order on the communicator's one stream, and each blocking call and each
//     completed request means the data is in place (the stream was waited on);
//   * messages carry no tags: between two ranks they match in issue order;
//   * non-blocking sends and receives wait in a queue and are launched together, as one NCCL
//     group, by the next blocking call, collective, test or wait on this communicator, so an
//     exchange (isend + irecv, or irecv + send, on both ranks) cannot deadlock. Receives posted
//     long ahead (a pipeline's mailbox) are in that group too: a wait on one of them waits for
//     the whole group, so such code keeps its buffers on the host (MPI) or posts per exchange.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> mpi);
// cudaSetDevice(local_rank % visible devices) for the process's node-local rank (Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, else 0); returns the device chosen.
// Throws UserError when no GPU is visible.
int select_local_device();
// "yes" | "no" | "unknown": whether the MPI library reports CUDA-aware transfers
// (MPIX_Query_cuda_support, Open MPI's extension).
std::string cuda_aware_mpi();

}  // namespace sb::parallel
