// SPDX-License-Identifier: Apache-2.0
// The ring algorithms over a communicator's point-to-point messages: reduce-scatter, all-gather
// and their sequence, all-reduce (Patarasuk & Yuan; what NCCL runs within a node). Each rank
// sends n−1 segments of S/n bytes per phase, so an all-reduce sends 2(n−1)/n·S: the bytes are
// counted as they are handed to the transport, the measured side of that formula. Sums of
// floats (gradients; bf16 and fp16 for 16-bit main gradients' all-reduce). Progress happens inside test()/wait() (MPI progresses non-blocking calls
// only inside MPI calls); waits poll and give way to fault.hpp's checks.
// Leaves out tree algorithms (small messages: use Communicator::iall_reduce) and other types.
#pragma once

#include <cstdint>

#include "parallel/communicator.hpp"

namespace sb::parallel {

// data (count) in place: the element-wise sum over every rank. `tag` must be unique among
// ring calls in flight on this communicator. `bytes_sent`, when given, grows by the bytes
// this rank sends. Recorded in comm.stats() as one all_reduce with algorithm "ring" (its
// messages are not recorded one by one). 16-bit floats (precision.main_grads storage) add in
// fp32 and round each partial sum to nearest even, as NCCL's rings do.
Request ring_iall_reduce(Communicator& comm, float* data, std::int64_t count, int tag,
                         std::int64_t* bytes_sent = nullptr);
Request ring_iall_reduce(Communicator& comm, bf16* data, std::int64_t count, int tag,
                         std::int64_t* bytes_sent = nullptr);
Request ring_iall_reduce(Communicator& comm, fp16* data, std::int64_t count, int tag,
                         std::int64_t* bytes_sent = nullptr);

// buffer (size·block): rank r ends with the sum over ranks of block r in place (the other
// blocks hold partial sums). Recorded as one reduce_scatter.
Request ring_ireduce_scatter(Communicator& comm, float* buffer, std::int64_t block, int tag,
                             std::int64_t* bytes_sent = nullptr);

// buffer (size·block): every rank's block r (its own, r = rank) ends up everywhere, in place.
// Recorded as one all_gather.
Request ring_iall_gather(Communicator& comm, float* buffer, std::int64_t block, int tag,
                         std::int64_t* bytes_sent = nullptr);

}  // namespace sb::parallel
