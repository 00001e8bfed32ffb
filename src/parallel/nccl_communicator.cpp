// SPDX-License-Identifier: Apache-2.0
// The NCCL implementation of Communicator (nccl_communicator.hpp): device buffers through NCCL
// on one stream of its own, host buffers through the wrapped MPI communicator, every call
// recorded in this communicator's CommStats. Waits poll the stream, NCCL's asynchronous error
// and the fault channel (fault.hpp), so a peer's failure ends a wait with an error, not a hang.
// Leaves out per-peer channels: device messages run in issue order on the one stream.
#include "parallel/nccl_communicator.hpp"
#include "parallel/node_placement.hpp"

#include <mpi.h>

#include <string_view>

#include "core/check.hpp"

#ifdef SB_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "parallel/bandwidth.hpp"
#include "parallel/fault.hpp"
#endif

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support
#endif

namespace sb::parallel {

std::string cuda_aware_mpi() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  // Built with CUDA support; the run-time answer says whether it is enabled in this run.
  return MPIX_Query_cuda_support() == 1 ? "yes" : "no";
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  return "no";  // this Open MPI was built without CUDA support
#else
  return "unknown";  // an MPI without the extension does not say
#endif
}

#ifndef SB_HAVE_NCCL

namespace {
[[noreturn]] void throw_not_compiled(std::string_view what) {
  throw UserError(fmt::format(
      "{} needs NCCL, but this build of scalebench has none: install NCCL (nccl.h and libnccl, "
      "e.g. with the CUDA toolkit) and configure with -DSB_ENABLE_CUDA=ON -DSB_ENABLE_NCCL=ON",
      what));
}
}  // namespace

bool nccl_compiled() { return false; }
std::string nccl_version() { return "not compiled"; }
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator>) {
  throw_not_compiled("the NCCL communicator (device: cuda with more than one rank)");
}
int select_local_device() { throw_not_compiled("select_local_device"); }

#else  // SB_HAVE_NCCL

// SB_NCCL_CHECK: a failed NCCL call becomes sb::Error naming the call, NCCL's message (and its
// last error's detail), file:line, rank and host. ncclInProgress counts as a failure: only
// non-blocking communicators return it, and these are blocking ones.
#define SB_NCCL_CHECK(call)                                                                 \
  do {                                                                                      \
    const ncclResult_t sb_nccl_result_ = (call);                                            \
    if (sb_nccl_result_ != ncclSuccess)                                                     \
      throw_nccl_failure(sb_nccl_result_, #call, __FILE__, __LINE__);                       \
  } while (0)

namespace {

[[noreturn]] void throw_nccl_failure(ncclResult_t result, const char* call, const char* file,
                                     int line) {
  const char* detail = ncclGetLastError(nullptr);
  throw Error(fmt::format("NCCL call `{}` failed: {}{}{} at {}:{}, {}", call,
                          ncclGetErrorString(result), detail && *detail ? ": " : "",
                          detail ? detail : "", file, line, where_am_i()));
}

constexpr auto kFaultCheckInterval = std::chrono::milliseconds(1);

ncclDataType_t nccl_type(DataType type) {
  switch (type) {
    case DataType::f32: return ncclFloat32;
    case DataType::f64: return ncclFloat64;
    case DataType::i32: return ncclInt32;
    case DataType::i64: return ncclInt64;
    case DataType::u8: return ncclUint8;
    case DataType::bf16: return ncclBfloat16;
    case DataType::f16: return ncclFloat16;
  }
  SB_CHECK(false, "unknown DataType {}", static_cast<int>(type));
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  SB_CHECK(false, "unknown ReduceOp {}", static_cast<int>(op));
}

std::size_t nccl_count(std::int64_t count) {
  SB_CHECK(count >= 0, "negative element count {}", count);
  return static_cast<std::size_t>(count);
}

// Where a buffer lives: the device (or managed memory) of `device`, or the host (pageable or
// pinned). A null pointer (an empty buffer) counts as host memory.
bool on_device(const void* data, int device) {
  if (data == nullptr) return false;
  cudaPointerAttributes attributes{};
  SB_CUDA_CHECK(cudaPointerGetAttributes(&attributes, data));
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
    return false;
  SB_CHECK(attributes.type == cudaMemoryTypeManaged || attributes.device == device,
           "NCCL communicator on device {} was given a buffer on device {}", device,
           attributes.device);
  return true;
}

// One NCCL launch (a collective, or a group of messages) and the event recorded after it; a
// message issued non-blocking waits in the communicator's queue until something launches it.
struct Launch {
  cudaEvent_t event = nullptr;
  bool launched = false;
  explicit Launch() { SB_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
  ~Launch() {
    if (event) cudaEventDestroy(event);  // no throw from a destructor
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
};

class NcclCommunicator;

// A call in flight on the device; completion records it in the communicator's stats.
class NcclRequest final : public Request::Impl {
 public:
  NcclRequest(NcclCommunicator& comm, CommRecord record, std::shared_ptr<Launch> launch)
      : comm_(comm), record_(std::move(record)), launch_(std::move(launch)) {}
  bool test() override;
  void wait() override;

 private:
  void finish();
  NcclCommunicator& comm_;
  CommRecord record_;
  std::shared_ptr<Launch> launch_;
  bool done_ = false;
};

// A call in flight on the host (the wrapped MPI communicator's request): completion moves the
// MPI communicator's record into this communicator's stats.
class HostRequest final : public Request::Impl {
 public:
  HostRequest(NcclCommunicator& comm, Request request)
      : comm_(comm), request_(std::move(request)) {}
  bool test() override;
  void wait() override;

 private:
  NcclCommunicator& comm_;
  Request request_;
};

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `mpi`: rank 0 creates the NCCL id, `mpi` broadcasts it, every rank joins.
  NcclCommunicator(std::unique_ptr<Communicator> mpi, int device)
      : mpi_(std::move(mpi)), device_(device) {
    SB_CUDA_CHECK(cudaSetDevice(device_));
    ncclUniqueId id{};
    if (mpi_->rank() == 0) SB_NCCL_CHECK(ncclGetUniqueId(&id));
    const bool recording = mpi_->stats().enabled();
    mpi_->stats().set_enabled(false);  // set-up, not traffic
    mpi_->broadcast(&id, static_cast<std::int64_t>(sizeof id), DataType::u8, 0);
    refuse_shared_gpus();
    mpi_->stats().set_enabled(recording);
    absorb_host_records();  // what `mpi` recorded before it was wrapped, in order, now
    SB_NCCL_CHECK(ncclCommInitRank(&comm_, mpi_->size(), id, mpi_->rank()));
    // after the init, which may throw: a constructor that throws runs no destructor
    SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    SB_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  }
  // NCCL takes one rank per GPU and answers two ranks on one GPU with "duplicate GPU": say
  // which ranks share which GPU, and what to do, before it does. Collective over mpi_.
  void refuse_shared_gpus() {
    cudaDeviceProp prop{};
    SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    std::vector<char> uuids(16 * static_cast<std::size_t>(mpi_->size()));
    mpi_->all_gather(prop.uuid.bytes, uuids.data(), 16, DataType::u8);
    const auto uuid_of = [&](int r) { return std::string_view(uuids.data() + 16 * r, 16); };
    for (int a = 0; a < mpi_->size(); ++a)
      for (int b = a + 1; b < mpi_->size(); ++b)
        SB_USER_CHECK(uuid_of(a) != uuid_of(b),
                      "NCCL communicator '{}': ranks {} and {} were given the same GPU (rank {} here uses a {}, "
                      "device {}); NCCL needs one rank per GPU: launch at most as many ranks per node as it has "
                      "GPUs, or give each rank its own with CUDA_VISIBLE_DEVICES",
                      mpi_->name(), a, b, mpi_->rank(), prop.name, device_);
  }

  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  ~NcclCommunicator() override {
    // Teardown errors are ignored (destructors must not throw). Every call was waited for by
    // its caller or its request's destructor, so the stream is idle; when it is not (queued
    // messages, work of a failing job) the communicator is aborted rather than waited on, as
    // the peers it waits for may be gone.
    cudaSetDevice(device_);
    if (comm_) {
      if (pending_.empty() && cudaStreamQuery(stream_) == cudaSuccess)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
    }
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const std::string& name() const override { return mpi_->name(); }

  void all_reduce(void* data, std::int64_t count, DataType type, ReduceOp op) override {
    if (!on_device(data, device_)) return on_host([&] { mpi_->all_reduce(data, count, type, op); });
    wait_for(start_all_reduce(data, count, type, op, true));
  }
  Request iall_reduce(void* data, std::int64_t count, DataType type, ReduceOp op) override {
    if (!on_device(data, device_))
      return on_host_async(mpi_->iall_reduce(data, count, type, op));
    return boxed(start_all_reduce(data, count, type, op, false));
  }
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DataType type,
                      ReduceOp op) override {
    if (!both_on_device(send, recv, "reduce_scatter"))
      return on_host([&] { mpi_->reduce_scatter(send, recv, recv_count, type, op); });
    wait_for(start_reduce_scatter(send, recv, recv_count, type, op, true));
  }
  Request ireduce_scatter(const void* send, void* recv, std::int64_t recv_count, DataType type,
                          ReduceOp op) override {
    if (!both_on_device(send, recv, "ireduce_scatter"))
      return on_host_async(mpi_->ireduce_scatter(send, recv, recv_count, type, op));
    return boxed(start_reduce_scatter(send, recv, recv_count, type, op, false));
  }
  void all_gather(const void* send, void* recv, std::int64_t send_count, DataType type) override {
    if (!both_on_device(send, recv, "all_gather"))
      return on_host([&] { mpi_->all_gather(send, recv, send_count, type); });
    wait_for(start_all_gather(send, recv, send_count, type, true));
  }
  Request iall_gather(const void* send, void* recv, std::int64_t send_count,
                      DataType type) override {
    if (!both_on_device(send, recv, "iall_gather"))
      return on_host_async(mpi_->iall_gather(send, recv, send_count, type));
    return boxed(start_all_gather(send, recv, send_count, type, false));
  }
  Request iall_gatherv_in_place(void* recv, std::span<const std::int64_t> counts, DataType type) override {
    if (!on_device(recv, device_)) return on_host_async(mpi_->iall_gatherv_in_place(recv, counts, type));
    SB_CHECK(static_cast<int>(counts.size()) == size(), "iall_gatherv on '{}': {} counts for {} ranks", name(),
             counts.size(), size());
    std::int64_t total = 0;
    for (const std::int64_t count : counts) total += count;
    CommRecord record = begin(Collective::all_gather, 0, type, false);
    record.bytes = total * static_cast<std::int64_t>(size_of(type));
    const std::size_t element = size_of(type);
    return boxed(launch_collective(std::move(record), [&] {  // NCCL has no all-gatherv: a broadcast per rank
      SB_NCCL_CHECK(ncclGroupStart());
      std::int64_t at = 0;
      for (int root = 0; root < size(); ++root) {
        void* block = static_cast<char*>(recv) + static_cast<std::size_t>(at) * element;
        const std::int64_t count = counts[static_cast<std::size_t>(root)];
        if (count > 0)
          SB_NCCL_CHECK(ncclBroadcast(block, block, nccl_count(count), nccl_type(type), root, comm_, stream_));
        at += count;
      }
      SB_NCCL_CHECK(ncclGroupEnd());
    }));
  }
  void broadcast(void* data, std::int64_t count, DataType type, int root) override {
    if (!on_device(data, device_))
      return on_host([&] { mpi_->broadcast(data, count, type, root); });
    SB_CHECK(root >= 0 && root < size(), "broadcast root {} outside communicator of {}", root, size());
    CommRecord record = begin(Collective::broadcast, count, type, true);
    wait_for(launch_collective(std::move(record), [&] {
      SB_NCCL_CHECK(ncclBroadcast(data, data, nccl_count(count), nccl_type(type), root, comm_, stream_));
    }));
  }
  void send(const void* data, std::int64_t count, DataType type, int dest, int tag) override {
    if (!on_device(data, device_))
      return on_host([&] { mpi_->send(data, count, type, dest, tag); });
    wait_for(queue_message(Collective::send, const_cast<void*>(data), count, type, dest, true));
  }
  void recv(void* data, std::int64_t count, DataType type, int source, int tag) override {
    if (!on_device(data, device_))
      return on_host([&] { mpi_->recv(data, count, type, source, tag); });
    wait_for(queue_message(Collective::recv, data, count, type, source, true));
  }
  Request isend(const void* data, std::int64_t count, DataType type, int dest, int tag) override {
    if (!on_device(data, device_)) return on_host_async(mpi_->isend(data, count, type, dest, tag));
    return boxed(queue_message(Collective::send, const_cast<void*>(data), count, type, dest, false));
  }
  Request irecv(void* data, std::int64_t count, DataType type, int source, int tag) override {
    if (!on_device(data, device_)) return on_host_async(mpi_->irecv(data, count, type, source, tag));
    return boxed(queue_message(Collective::recv, data, count, type, source, false));
  }
  // Every rank's device calls on this communicator have completed, then an MPI barrier.
  void barrier() override {
    launch_pending();
    auto marker = std::make_shared<Launch>();
    SB_CUDA_CHECK(cudaEventRecord(marker->event, stream_));
    marker->launched = true;
    wait_until_complete(*marker);
    on_host([&] { mpi_->barrier(); });
  }

  std::unique_ptr<Communicator> split(int color, int key, const std::string& name) override {
    launch_pending();
    const bool recording = mpi_->stats().enabled();
    mpi_->stats().set_enabled(false);  // set-up, not traffic
    std::unique_ptr<Communicator> part = mpi_->split(color, key, name);
    mpi_->stats().set_enabled(recording);
    if (!part) return nullptr;  // color MPI_UNDEFINED: not a member
    return std::make_unique<NcclCommunicator>(std::move(part), device_);
  }

  // What a request calls: launches the queued messages its launch belongs to, then the poll.
  void launch_if_queued(const Launch& launch) {
    if (!launch.launched) launch_pending();
  }
  bool query(const Launch& launch) {
    check_usable();
    const cudaError_t status = cudaEventQuery(launch.event);
    if (status == cudaSuccess) return true;
    if (status != cudaErrorNotReady) {
      abort_after_failure();
      SB_CUDA_CHECK(status);
    }
    return false;
  }
  // Spins on the event; about once a millisecond asks NCCL whether the communicator failed (a
  // peer died or a network error) and the fault channel whether the job is going down. Either
  // aborts the NCCL communicator, so its kernels stop, and throws.
  void wait_until_complete(const Launch& launch) {
    using clock = std::chrono::steady_clock;
    launch_if_queued(launch);
    auto next_check = clock::now() + kFaultCheckInterval;
    while (!query(launch)) {
      const auto now = clock::now();
      if (now < next_check) continue;
      next_check = now + kFaultCheckInterval;
      ncclResult_t state = ncclSuccess;
      SB_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
      if (state != ncclSuccess && state != ncclInProgress) {
        abort_after_failure();
        throw_nccl_failure(state, "ncclCommGetAsyncError (a peer failed or the network broke)",
                           __FILE__, __LINE__);
      }
      try {
        throw_if_job_failing();
      } catch (...) {
        abort_after_failure();
        throw;
      }
    }
  }

  // Moves what the MPI communicator recorded into this communicator's stats.
  void absorb_host_records() {
    for (const CommRecord& record : mpi_->stats().records()) stats_.record(record);
    mpi_->stats().clear();
  }
  void sync_host_recording() { mpi_->stats().set_enabled(stats_.enabled()); }

 private:
  struct Started {
    CommRecord record;
    std::shared_ptr<Launch> launch;
  };
  struct QueuedMessage {
    Collective kind;  // send or recv
    void* data;
    std::int64_t count;
    DataType type;
    int peer;
  };

  // The record of a call about to be issued; its clock starts here (as the MPI one's does).
  CommRecord begin(Collective collective, std::int64_t count, DataType type, bool blocking) const {
    CommRecord record;
    record.collective = collective;
    record.bytes = collective_bytes(collective, count, static_cast<std::int64_t>(size_of(type)),
                                    size());
    record.ranks = collective == Collective::send || collective == Collective::recv ? 2 : size();
    record.blocking = blocking;
    record.algorithm = "nccl";  // ring or tree: NCCL chooses and does not say
    record.start_s = comm_clock_seconds();
    if (blocking) record.wait_start_s = record.start_s;
    return record;
  }

  template <class Call>
  void on_host(Call call) {
    sync_host_recording();
    call();
    absorb_host_records();
  }
  Request on_host_async(Request request) {
    return Request(std::make_unique<HostRequest>(*this, std::move(request)));
  }

  bool both_on_device(const void* send, const void* recv, const char* call) {
    const bool send_device = on_device(send, device_), recv_device = on_device(recv, device_);
    if (send == nullptr) return recv_device;
    if (recv == nullptr) return send_device;
    SB_CHECK(send_device == recv_device,
             "{}: the send buffer is in {} memory and the receive buffer in {} memory; both must "
             "be on the device or both on the host", call, send_device ? "device" : "host",
             recv_device ? "device" : "host");
    return send_device;
  }

  void check_usable() const {
    SB_CHECK(comm_ != nullptr, "NCCL communicator '{}' was aborted after a failure", name());
  }

  // Orders the next launch after every kernel and copy issued so far on the device's blocking
  // streams (a CudaContext's stream, cudaMemcpy's legacy stream), which may still be writing the
  // buffers: an event recorded on the legacy default stream completes only after all of them,
  // and the communicator's (non-blocking) stream waits for it, without the host waiting. The
  // reverse order is not imposed: compute issued later does not wait for communication.
  void order_after_device_work() {
    SB_CUDA_CHECK(cudaEventRecord(ready_, cudaStreamLegacy));
    SB_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
  }

  // Collectives go after the queued messages (issue order is kept on the stream).
  template <class Enqueue>
  Started launch_collective(CommRecord record, Enqueue enqueue) {
    check_usable();
    launch_pending();
    auto launch = std::make_shared<Launch>();
    SB_CUDA_CHECK(cudaSetDevice(device_));
    order_after_device_work();
    enqueue();
    SB_CUDA_CHECK(cudaEventRecord(launch->event, stream_));
    launch->launched = true;
    return {std::move(record), std::move(launch)};
  }

  Started start_all_reduce(void* data, std::int64_t count, DataType type, ReduceOp op,
                           bool blocking) {
    return launch_collective(begin(Collective::all_reduce, count, type, blocking), [&] {
      SB_NCCL_CHECK(ncclAllReduce(data, data, nccl_count(count), nccl_type(type), nccl_op(op),
                                  comm_, stream_));
    });
  }
  Started start_reduce_scatter(const void* send, void* recv, std::int64_t recv_count,
                               DataType type, ReduceOp op, bool blocking) {
    return launch_collective(begin(Collective::reduce_scatter, recv_count, type, blocking), [&] {
      SB_NCCL_CHECK(ncclReduceScatter(send, recv, nccl_count(recv_count), nccl_type(type),
                                      nccl_op(op), comm_, stream_));
    });
  }
  // In place when send is recv's own block (NCCL's in-place rule is the interface's).
  Started start_all_gather(const void* send, void* recv, std::int64_t send_count, DataType type,
                           bool blocking) {
    return launch_collective(begin(Collective::all_gather, send_count, type, blocking), [&] {
      SB_NCCL_CHECK(ncclAllGather(send, recv, nccl_count(send_count), nccl_type(type), comm_,
                                  stream_));
    });
  }

  // A message joins the queue; queued messages are launched together, as one NCCL group, by
  // the next blocking call, collective, test or wait. So an exchange (isend and irecv, or
  // irecv and then a blocking send, on both ranks) runs as one group and cannot deadlock,
  // where one launch per message on the one stream would wait for a receive queued behind it.
  Started queue_message(Collective kind, void* data, std::int64_t count, DataType type, int peer,
                        bool blocking) {
    check_usable();
    SB_CHECK(peer >= 0 && peer < size(), "{} peer {} outside communicator of {}",
             to_string(kind), peer, size());
    nccl_count(count);  // checked here: nothing may throw between ncclGroupStart and End
    CommRecord record = begin(kind, count, type, blocking);
    if (!queue_launch_ || queue_launch_->launched) queue_launch_ = std::make_shared<Launch>();
    pending_.push_back({kind, data, count, type, peer});
    Started started{std::move(record), queue_launch_};
    if (blocking) launch_pending();
    return started;
  }

  void launch_pending() {
    if (pending_.empty()) return;
    check_usable();
    SB_CUDA_CHECK(cudaSetDevice(device_));
    const std::vector<QueuedMessage> messages = std::move(pending_);
    pending_.clear();
    order_after_device_work();
    SB_NCCL_CHECK(ncclGroupStart());
    ncclResult_t failed = ncclSuccess;
    const char* failed_call = "";
    for (const QueuedMessage& m : messages) {
      const ncclResult_t result =
          m.kind == Collective::send
              ? ncclSend(m.data, nccl_count(m.count), nccl_type(m.type), m.peer, comm_, stream_)
              : ncclRecv(m.data, nccl_count(m.count), nccl_type(m.type), m.peer, comm_, stream_);
      if (result != ncclSuccess && failed == ncclSuccess) {
        failed = result;
        failed_call = m.kind == Collective::send ? "ncclSend(queued message)" : "ncclRecv(queued message)";
      }
    }
    const ncclResult_t ended = ncclGroupEnd();  // also after a failed call: the group must close
    // A failed launch leaves its requests' event unrecorded (a query would say "complete"), so
    // the communicator is aborted and every later use throws.
    if (failed != ncclSuccess || ended != ncclSuccess) {
      abort_after_failure();
      if (failed != ncclSuccess) throw_nccl_failure(failed, failed_call, __FILE__, __LINE__);
      throw_nccl_failure(ended, "ncclGroupEnd() (queued messages)", __FILE__, __LINE__);
    }
    const cudaError_t recorded = cudaEventRecord(queue_launch_->event, stream_);
    if (recorded != cudaSuccess) abort_after_failure();
    SB_CUDA_CHECK(recorded);
    queue_launch_->launched = true;
  }

  void wait_for(Started started) {
    NcclRequest request(*this, std::move(started.record), std::move(started.launch));
    request.wait();
  }
  Request boxed(Started started) {
    return Request(std::make_unique<NcclRequest>(*this, std::move(started.record),
                                                 std::move(started.launch)));
  }

  // After a failure the NCCL communicator is aborted (its kernels end) and unusable; the job
  // is being taken down (fault.hpp).
  void abort_after_failure() {
    if (comm_ == nullptr) return;
    ncclCommAbort(comm_);  // its own failure is no news: the caller throws the first one
    comm_ = nullptr;
    pending_.clear();
  }

  std::unique_ptr<Communicator> mpi_;
  int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;  // order_after_device_work's marker on the legacy stream
  std::vector<QueuedMessage> pending_;
  std::shared_ptr<Launch> queue_launch_;  // the launch the queued messages will share
};

bool NcclRequest::test() {
  if (!done_) {
    comm_.launch_if_queued(*launch_);
    if (comm_.query(*launch_)) finish();
  }
  return done_;
}

void NcclRequest::wait() {
  if (done_) return;
  if (record_.wait_start_s < 0) record_.wait_start_s = comm_clock_seconds();
  comm_.wait_until_complete(*launch_);
  finish();
}

void NcclRequest::finish() {
  done_ = true;
  comm_.stats().record_completed(std::move(record_));
}

bool HostRequest::test() {
  comm_.sync_host_recording();
  const bool complete = request_.test();
  comm_.absorb_host_records();
  return complete;
}

void HostRequest::wait() {
  comm_.sync_host_recording();
  request_.wait();
  comm_.absorb_host_records();
}

}  // namespace

bool nccl_compiled() { return true; }

std::string nccl_version() {
  int version = 0;
  SB_NCCL_CHECK(ncclGetVersion(&version));
  // NCCL_VERSION_CODE: major·10000 + minor·100 + patch since 2.9 (major·1000 + minor·100 before).
  if (version >= 10000) return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
  return fmt::format("{}.{}.{}", version / 1000, version / 100 % 10, version % 100);
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> mpi) {
  SB_CHECK(mpi != nullptr, "make_nccl_communicator: no MPI communicator to wrap");
  SB_USER_CHECK(kernels::cuda::visible_device_count() > 0,
                "the NCCL communicator needs a CUDA GPU, but none is visible on {} (check "
                "CUDA_VISIBLE_DEVICES and the NVIDIA driver, or use device: cpu)",
                where_am_i());
  int device = 0;
  SB_CUDA_CHECK(cudaGetDevice(&device));
  return std::make_unique<NcclCommunicator>(std::move(mpi), device);
}

int select_local_device() {
  const int devices = kernels::cuda::visible_device_count();
  SB_USER_CHECK(devices > 0,
                "no CUDA GPU is visible on {} (check CUDA_VISIBLE_DEVICES and the NVIDIA driver, "
                "or use device: cpu)", where_am_i());
  const int device = launcher_local_rank().value_or(0) % devices;
  SB_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

#endif  // SB_HAVE_NCCL

}  // namespace sb::parallel
