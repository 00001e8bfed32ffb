// SPDX-License-Identifier: Apache-2.0
// How ZeRO cuts a flat buffer over the data-parallel ranks: one rule for the trainer's sharding
// (train/data_parallel.cpp, train/storage_main_gradients.cpp) and the cost model that prices it
// (costmodel/exchange_work.cpp, costmodel/kernel_calls.cpp).
#pragma once

#include <cstdint>

namespace sb::parallel {

// ZeRO's shard of `parameters` over `ranks`: ceil(parameters / ranks) each, the last one shorter.
inline std::int64_t zero_shard_size(std::int64_t parameters, int ranks) { return (parameters + ranks - 1) / ranks; }

}  // namespace sb::parallel
