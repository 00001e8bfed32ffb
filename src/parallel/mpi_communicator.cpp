// SPDX-License-Identifier: Apache-2.0
// The MPI implementation of Communicator: every call is an MPI_I* call; blocking forms wait on
// it by polling MPI_Test, checking the fault channel and termination flag about once a
// millisecond, so another rank's failure ends the wait (fault.hpp). Leaves out NCCL and the
// process grid.
#include <mpi.h>

#include <chrono>
#include <type_traits>
#include <climits>
#include <vector>

#include "parallel/bandwidth.hpp"
#include "parallel/communicator.hpp"
#include "parallel/fault.hpp"
#include "parallel/libnbc_allreduce_choice.hpp"
#include "parallel/mpi_check.hpp"
#include "precision/rounded_sum.hpp"

namespace sb::parallel {

namespace {

constexpr auto kFaultCheckInterval = std::chrono::milliseconds(1);

MPI_Datatype mpi_type(DataType type) {
  switch (type) {
    case DataType::f32: return MPI_FLOAT;
    case DataType::f64: return MPI_DOUBLE;
    case DataType::i32: return MPI_INT32_T;
    case DataType::i64: return MPI_INT64_T;
    case DataType::u8: return MPI_UINT8_T;
    case DataType::bf16:
    case DataType::f16: return MPI_UINT16_T;  // reduced by the user operations below
  }
  SB_CHECK(false, "unknown DataType {}", static_cast<int>(type));
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  SB_CHECK(false, "unknown ReduceOp {}", static_cast<int>(op));
}

// The reduction of two 16-bit floats (F: bf16 or fp16, as their bits): in fp32, rounded to
// nearest even, as NCCL reduces them. Sums, the gradients' reduction, take the vectorised array
// sum (precision/rounded_sum.hpp); max and min the scalar loop.
template <class F, ReduceOp op>
void reduce_16_bit(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const F*>(in);
  auto* b = static_cast<F*>(inout);
  if constexpr (op == ReduceOp::sum) {
    add_rounded(b, a, *len);
  } else {
    for (int i = 0; i < *len; ++i) {
      const float x = to_float(a[i]), y = to_float(b[i]);
      const float r = op == ReduceOp::max ? (x > y ? x : y) : (x < y ? x : y);
      if constexpr (std::is_same_v<F, bf16>)
        b[i] = to_bf16(r);
      else
        b[i] = to_fp16(r);
    }
  }
}

// MPI has no 16-bit floats: their reductions are user operations over MPI_UINT16_T, created
// once (MPI_Init must have run) and kept until MPI_Finalize.
MPI_Op created_op(MPI_User_function* function) {
  MPI_Op op = MPI_OP_NULL;
  SB_MPI_CHECK(MPI_Op_create(function, /*commute=*/1, &op));
  return op;
}
template <class F>
MPI_Op mpi_op_16_bit(ReduceOp op) {
  static const MPI_Op ops[] = {created_op(&reduce_16_bit<F, ReduceOp::sum>),
                               created_op(&reduce_16_bit<F, ReduceOp::max>),
                               created_op(&reduce_16_bit<F, ReduceOp::min>)};
  return ops[static_cast<int>(op)];
}

MPI_Op mpi_op(ReduceOp op, DataType type) {
  if (type == DataType::bf16) return mpi_op_16_bit<bf16>(op);
  if (type == DataType::f16) return mpi_op_16_bit<fp16>(op);
  return mpi_op(op);
}

// MPI counts are int: 2^31-1 elements (8 GiB of float) per call.
int mpi_count(std::int64_t count) {
  SB_CHECK(count >= 0 && count <= INT_MAX,
           "element count {} does not fit MPI's int count; split the buffer", count);
  return static_cast<int>(count);
}

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// Spins on MPI_Test (which drives MPI's progress, as MPI_Wait would) and reads the clock;
// the fault channel is polled only when a millisecond has passed, so small calls pay for
// one clock read per MPI_Test and nothing more.
void wait_polling(MPI_Request& request) {
  using clock = std::chrono::steady_clock;
  auto next_check = clock::now() + kFaultCheckInterval;
  for (;;) {
    int done = 0;
    SB_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    const auto now = clock::now();
    if (now >= next_check) {
      throw_if_job_failing();
      next_check = now + kFaultCheckInterval;
    }
  }
}

// One MPI call in flight; completion records it. If a wait throws, the MPI request is
// abandoned (never freed or waited on again): the job is being taken down.
class MpiRequest final : public Request::Impl {
 public:
  MpiRequest(CommStats& stats, CommRecord record, MPI_Request request)
      : stats_(stats), record_(std::move(record)), request_(request) {}
  // A call whose count and displacement arrays MPI reads until it completes: they live here.
  MpiRequest(CommStats& stats, CommRecord record, MPI_Request request, std::vector<int> arrays)
      : stats_(stats), record_(std::move(record)), request_(request), arrays_(std::move(arrays)) {}

  bool test() override {
    if (!done_) {
      int flag = 0;
      SB_MPI_CHECK(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE));
      if (flag) finish();
    }
    return done_;
  }

  void wait() override {
    if (done_) return;
    if (record_.wait_start_s < 0) record_.wait_start_s = comm_clock_seconds();
    wait_polling(request_);
    finish();
  }

 private:
  void finish() {
    done_ = true;
    stats_.record_completed(std::move(record_));
  }

  CommStats& stats_;
  CommRecord record_;
  MPI_Request request_;
  std::vector<int> arrays_;
  bool done_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, std::string name) : comm_(comm), name_(std::move(name)) {
    SB_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    SB_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    SB_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  ~MpiCommunicator() override {
    if (mpi_running()) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }

  void all_reduce(void* data, std::int64_t count, DataType type, ReduceOp op) override {
    start_all_reduce(data, count, type, op, true).wait();
  }
  Request iall_reduce(void* data, std::int64_t count, DataType type, ReduceOp op) override {
    return boxed(start_all_reduce(data, count, type, op, false));
  }
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DataType type,
                      ReduceOp op) override {
    start_reduce_scatter(send, recv, recv_count, type, op, true).wait();
  }
  Request ireduce_scatter(const void* send, void* recv, std::int64_t recv_count, DataType type,
                          ReduceOp op) override {
    return boxed(start_reduce_scatter(send, recv, recv_count, type, op, false));
  }
  void all_gather(const void* send, void* recv, std::int64_t send_count, DataType type) override {
    start_all_gather(send, recv, send_count, type, true).wait();
  }
  Request iall_gather(const void* send, void* recv, std::int64_t send_count,
                      DataType type) override {
    return boxed(start_all_gather(send, recv, send_count, type, false));
  }
  Request iall_gatherv_in_place(void* recv, std::span<const std::int64_t> counts, DataType type) override {
    SB_CHECK(static_cast<int>(counts.size()) == size_, "iall_gatherv on '{}': {} counts for {} ranks", name_,
             counts.size(), size_);
    std::vector<int> arrays(2 * counts.size());  // counts, then displacements
    std::int64_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      arrays[r] = mpi_count(counts[r]);
      arrays[counts.size() + r] = mpi_count(total);
      total += counts[r];
    }
    mpi_count(total);
    CommRecord record = begin(Collective::all_gather, 0, type, false);
    record.bytes = total * static_cast<std::int64_t>(size_of(type));
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, arrays.data(),
                                 arrays.data() + counts.size(), mpi_type(type), comm_, &request));
    return Request(std::make_unique<MpiRequest>(stats_, std::move(record), request, std::move(arrays)));
  }
  void broadcast(void* data, std::int64_t count, DataType type, int root) override {
    CommRecord record = begin(Collective::broadcast, count, type, true);
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Ibcast(data, mpi_count(count), mpi_type(type), root, comm_, &request));
    MpiRequest(stats_, std::move(record), request).wait();
  }
  void send(const void* data, std::int64_t count, DataType type, int dest, int tag) override {
    start_send(data, count, type, dest, tag, true).wait();
  }
  void recv(void* data, std::int64_t count, DataType type, int source, int tag) override {
    start_recv(data, count, type, source, tag, true).wait();
  }
  Request isend(const void* data, std::int64_t count, DataType type, int dest, int tag) override {
    return boxed(start_send(data, count, type, dest, tag, false));
  }
  Request irecv(void* data, std::int64_t count, DataType type, int source, int tag) override {
    return boxed(start_recv(data, count, type, source, tag, false));
  }
  void barrier() override {
    CommRecord record = begin(Collective::barrier, 0, DataType::u8, true);
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Ibarrier(comm_, &request));
    MpiRequest(stats_, std::move(record), request).wait();
  }

  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override {
    MPI_Comm part = MPI_COMM_NULL;
    SB_MPI_CHECK(MPI_Comm_split(comm_, color, key, &part));
    if (part == MPI_COMM_NULL) return nullptr;  // color MPI_UNDEFINED: not a member
    return std::make_unique<MpiCommunicator>(part, name);
  }

 private:
  // The record of a call about to be issued; its clock starts here.
  CommRecord begin(Collective collective, std::int64_t count, DataType type, bool blocking) const {
    CommRecord record;
    record.collective = collective;
    record.bytes = collective_bytes(collective, count, static_cast<std::int64_t>(size_of(type)),
                                    size_);
    record.ranks = collective == Collective::send || collective == Collective::recv ? 2 : size_;
    record.blocking = blocking;
    record.algorithm = "mpi";
    record.start_s = comm_clock_seconds();
    if (blocking) record.wait_start_s = record.start_s;
    return record;
  }

  static Request boxed(MpiRequest&& call) {
    return Request(std::make_unique<MpiRequest>(std::move(call)));
  }

  MpiRequest start_all_reduce(void* data, std::int64_t count, DataType type, ReduceOp op,
                              bool blocking) {
    CommRecord record = begin(Collective::all_reduce, count, type, blocking);
    detail::choose_libnbc_allreduce_algorithm(record.bytes);
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(count), mpi_type(type), mpi_op(op, type),
                                comm_, &request));
    return MpiRequest(stats_, std::move(record), request);
  }

  MpiRequest start_reduce_scatter(const void* send, void* recv, std::int64_t recv_count,
                                  DataType type, ReduceOp op, bool blocking) {
    CommRecord record = begin(Collective::reduce_scatter, recv_count, type, blocking);
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Ireduce_scatter_block(send, recv, mpi_count(recv_count), mpi_type(type),
                                           mpi_op(op, type), comm_, &request));
    return MpiRequest(stats_, std::move(record), request);
  }

  MpiRequest start_all_gather(const void* send, void* recv, std::int64_t send_count,
                              DataType type, bool blocking) {
    CommRecord record = begin(Collective::all_gather, send_count, type, blocking);
    mpi_count(send_count * size_);
    const auto block_bytes = static_cast<std::ptrdiff_t>(send_count) *
                             static_cast<std::ptrdiff_t>(size_of(type));
    const bool in_place = send == static_cast<const char*>(recv) + rank_ * block_bytes;
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : send, mpi_count(send_count),
                                mpi_type(type), recv, mpi_count(send_count), mpi_type(type),
                                comm_, &request));
    return MpiRequest(stats_, std::move(record), request);
  }

  MpiRequest start_send(const void* data, std::int64_t count, DataType type, int dest, int tag,
                        bool blocking) {
    CommRecord record = begin(Collective::send, count, type, blocking);
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Isend(data, mpi_count(count), mpi_type(type), dest, tag, comm_, &request));
    return MpiRequest(stats_, std::move(record), request);
  }

  MpiRequest start_recv(void* data, std::int64_t count, DataType type, int source, int tag,
                        bool blocking) {
    CommRecord record = begin(Collective::recv, count, type, blocking);
    MPI_Request request = MPI_REQUEST_NULL;
    SB_MPI_CHECK(MPI_Irecv(data, mpi_count(count), mpi_type(type), source, tag, comm_, &request));
    return MpiRequest(stats_, std::move(record), request);
  }

  MPI_Comm comm_;
  std::string name_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_world_communicator() {
  SB_CHECK(mpi_running(), "make_mpi_world_communicator needs MPI to be initialised (MPI_Init)");
  fault_channel_init();
  MPI_Comm world = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  return std::make_unique<MpiCommunicator>(world, "world");
}

}  // namespace sb::parallel
