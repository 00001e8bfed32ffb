// SPDX-License-Identifier: Apache-2.0
// The collectives and point-to-point messages every strategy uses, behind one interface so the
// MPI (CPU) and NCCL (GPU) implementations are interchangeable. Every call is timed and counted
// in the communicator's CommStats (bytes, seconds, algorithm, algbw/busbw). Leaves out the
// process grid (process_grid.hpp), the bandwidth formulas (bandwidth.hpp) and fault handling
// (fault.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parallel/comm_stats.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::parallel {

// bf16 and f16: 16-bit floats (precision/bf16.hpp, fp16.hpp) as their bits; reductions over
// them add in fp32 and round each result to nearest even (MPI: a user-defined operation).
enum class DataType { f32, f64, i32, i64, u8, bf16, f16 };
std::size_t size_of(DataType type);
std::string_view to_string(DataType type);

template <class T> constexpr DataType data_type_of();
template <> constexpr DataType data_type_of<float>() { return DataType::f32; }
template <> constexpr DataType data_type_of<double>() { return DataType::f64; }
template <> constexpr DataType data_type_of<std::int32_t>() { return DataType::i32; }
template <> constexpr DataType data_type_of<std::int64_t>() { return DataType::i64; }
template <> constexpr DataType data_type_of<std::uint8_t>() { return DataType::u8; }
template <> constexpr DataType data_type_of<bf16>() { return DataType::bf16; }
template <> constexpr DataType data_type_of<fp16>() { return DataType::f16; }

enum class ReduceOp { sum, max, min };

// One non-blocking call in flight. Move-only; completing it (wait, or test returning true)
// records the call in its communicator's stats with the time from start to completion.
// Destroying an unfinished request waits for it.
class Request {
 public:
  class Impl {
   public:
    virtual ~Impl() = default;
    virtual bool test() = 0;  // true once complete (then recorded)
    virtual void wait() = 0;  // returns once complete (then recorded)
  };
  Request() = default;
  explicit Request(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
  Request(Request&&) noexcept = default;
  Request& operator=(Request&& other) noexcept;
  ~Request();

  bool test();   // true when complete; an empty request is complete
  void wait();
  bool active() const { return impl_ != nullptr; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Waits for every request, in order.
void wait_all(std::span<Request> requests);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& name() const = 0;  // "world", "dp", "tp", "pp", ...

  // data (count) in place: element-wise reduction over every rank
  virtual void all_reduce(void* data, std::int64_t count, DataType type, ReduceOp op) = 0;
  virtual Request iall_reduce(void* data, std::int64_t count, DataType type, ReduceOp op) = 0;
  // send (size()·recv_count): rank r receives the reduction of block r into recv (recv_count)
  virtual void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DataType type,
                              ReduceOp op) = 0;
  virtual Request ireduce_scatter(const void* send, void* recv, std::int64_t recv_count, DataType type,
                                  ReduceOp op) = 0;
  // send (send_count) from every rank -> recv (size()·send_count), rank r's block at r·send_count.
  // send may alias recv's own block (in place).
  virtual void all_gather(const void* send, void* recv, std::int64_t send_count, DataType type) = 0;
  virtual Request iall_gather(const void* send, void* recv, std::int64_t send_count, DataType type) = 0;
  // Blocks of different sizes, in place: rank r's counts[r] elements lie in recv after the
  // blocks of the ranks before it, each rank's own block already there (MPI_Allgatherv with
  // MPI_IN_PLACE; on GPUs one NCCL broadcast per rank, grouped). ZeRO-3's unit gathers.
  virtual Request iall_gatherv_in_place(void* recv, std::span<const std::int64_t> counts, DataType type) = 0;
  // data (count) from root to every rank
  virtual void broadcast(void* data, std::int64_t count, DataType type, int root) = 0;
  virtual void send(const void* data, std::int64_t count, DataType type, int dest, int tag) = 0;
  virtual void recv(void* data, std::int64_t count, DataType type, int source, int tag) = 0;
  virtual Request isend(const void* data, std::int64_t count, DataType type, int dest, int tag) = 0;
  virtual Request irecv(void* data, std::int64_t count, DataType type, int source, int tag) = 0;
  virtual void barrier() = 0;
  // Ranks with the same color form a new communicator, ordered by key (MPI_Comm_split).
  virtual std::unique_ptr<Communicator> split(int color, int key, const std::string& name) = 0;

  CommStats& stats() { return stats_; }
  const CommStats& stats() const { return stats_; }

  // Typed conveniences.
  template <class T>
  void all_reduce(std::span<T> data, ReduceOp op = ReduceOp::sum) {
    all_reduce(data.data(), static_cast<std::int64_t>(data.size()), data_type_of<T>(), op);
  }
  template <class T>
  T all_reduce_value(T value, ReduceOp op = ReduceOp::sum) {
    all_reduce(&value, 1, data_type_of<T>(), op);
    return value;
  }
  template <class T>
  std::vector<T> all_gather_value(T value) {
    std::vector<T> all(static_cast<std::size_t>(size()));
    all_gather(&value, all.data(), 1, data_type_of<T>());
    return all;
  }

 protected:
  CommStats stats_;
};

// MPI_COMM_WORLD (duplicated, so scalebench's traffic never mixes with a library's). MPI must
// be initialised. Blocking calls wait by polling, so a failure reported by another rank
// (fault.hpp) or a termination signal ends the wait with an exception instead of a hang.
std::unique_ptr<Communicator> make_mpi_world_communicator();

}  // namespace sb::parallel
