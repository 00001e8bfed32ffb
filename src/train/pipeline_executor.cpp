// SPDX-License-Identifier: Apache-2.0
// The pipeline executor: the transfer-model ping-pong at construction, then per step the
// schedule's operations with receives posted ahead, sends in flight and every wait timed.
#include "train/pipeline_executor.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "core/check.hpp"
#include "measure/timing.hpp"
#include "parallel/fault.hpp"

namespace sb::train {

using i64 = std::int64_t;
using parallel::comm_clock_seconds;
using parallel::DataType;
using parallel::Request;

namespace {

// Tags 0 .. 2m − 1 carry a step's messages; these two the construction's. 32767 is the
// smallest MPI_TAG_UB the MPI standard allows.
constexpr int kSizeTag = 32766;
constexpr int kPingPongTag = 32765;
constexpr int kStepEndTag = 32764;
constexpr i64 kMaxMicroBatches = kPingPongTag / 2;
constexpr int kPingPongWarmup = 3;

// Polls the request, yielding the CPU between polls (another rank on this core may be
// computing), and checks for a failed job about once a millisecond, as Communicator's own
// blocking calls do.
void wait_yielding(Request& request) {
  using clock = std::chrono::steady_clock;
  auto next_check = clock::now() + std::chrono::milliseconds(1);
  while (!request.test()) {
    std::this_thread::yield();
    if (const auto now = clock::now(); now >= next_check) {
      parallel::throw_if_job_failing();
      next_check = now + std::chrono::milliseconds(1);
    }
  }
}

}  // namespace

int pipeline_activation_tag(i64 micro, i64 chunk, i64 interleave) {
  return static_cast<int>(2 * (micro * interleave + chunk));
}
int pipeline_gradient_tag(i64 micro, i64 chunk, i64 interleave) {
  return static_cast<int>(2 * (micro * interleave + chunk) + 1);
}

// Receives from one neighbour, in the order this stage consumes them, at most `depth` posted at
// once, each into its own buffer until the operation that reads it has finished.
class PipelineExecutor::Mailbox {
 public:
  using Tag = int (*)(i64 micro, i64 chunk, i64 interleave);
  Mailbox(parallel::Communicator& comm, int peer, i64 bytes, int depth, std::vector<plan::PipelineOp> order,
          Tag tag, i64 interleave, MemoryTracker& tracker, const std::string& label)
      : comm_(comm), peer_(peer), bytes_(bytes), order_(std::move(order)), tag_(tag), interleave_(interleave) {
    for (int i = 0; i < depth; ++i) {
      buffers_.emplace_back(tracker, MemoryCategory::comm, bytes, label);
      free_.push_back(static_cast<std::size_t>(depth - 1 - i));
    }
  }

  // Posts the step's first receives.
  void start_step() {
    SB_CHECK(posted_.empty() && in_use_ == kNone, "pipeline mailbox: a step still has receives in flight");
    next_ = 0;
    post();
  }

  // Blocks until op's message (the next one in order) has arrived.
  const void* wait(const plan::PipelineOp& op) {
    SB_CHECK(!posted_.empty() && posted_.front().op.micro == op.micro && posted_.front().op.chunk == op.chunk,
             "pipeline mailbox: micro-batch {} of chunk {} consumed out of the schedule's order", op.micro, op.chunk);
    wait_yielding(posted_.front().request);
    in_use_ = posted_.front().buffer;
    posted_.pop_front();
    return buffers_[in_use_].data();
  }

  // The operation that read the last wait()'s buffer has finished: receive into it again.
  void release() {
    free_.push_back(in_use_);
    in_use_ = kNone;
    post();
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  void post() {
    while (!free_.empty() && next_ < order_.size()) {
      const std::size_t buffer = free_.back();
      free_.pop_back();
      const plan::PipelineOp op = order_[next_++];
      posted_.push_back({op, buffer,
                         comm_.irecv(buffers_[buffer].data(), bytes_, DataType::u8, peer_,
                                     tag_(op.micro, op.chunk, interleave_))});
    }
  }

  struct Posted {
    plan::PipelineOp op;
    std::size_t buffer;
    Request request;
  };
  parallel::Communicator& comm_;
  int peer_;
  i64 bytes_;
  std::vector<plan::PipelineOp> order_;  // the op reading each message, in the order they are consumed
  Tag tag_;
  i64 interleave_;
  std::vector<TrackedBuffer> buffers_;
  std::vector<std::size_t> free_;
  std::deque<Posted> posted_;
  std::size_t next_ = 0;           // index in order_ of the next receive to post
  std::size_t in_use_ = kNone;     // the buffer the current operation reads
};

struct PipelineExecutor::SendBuffer {
  TrackedBuffer memory;
  Request request;
};

PipelineExecutor::PipelineExecutor(parallel::Communicator& pp, PipelineStage& stage,
                                   plan::PipelineSchedule schedule, i64 micro_batches,
                                   MemoryTracker& tracker, PipelineExecutorOptions options)
    : PipelineExecutor(pp, std::vector<PipelineStage*>{&stage}, schedule, micro_batches, tracker, options) {}

PipelineExecutor::PipelineExecutor(parallel::Communicator& pp, std::vector<PipelineStage*> chunks,
                                   plan::PipelineSchedule schedule, i64 micro_batches,
                                   MemoryTracker& tracker, PipelineExecutorOptions options)
    : pp_(pp),
      chunks_(std::move(chunks)),
      schedule_(schedule),
      micro_batches_(micro_batches),
      tracker_(tracker),
      stage_(pp.rank()),
      stages_(pp.size()) {
  const i64 v = interleave();
  SB_CHECK(v >= 1, "pipeline executor without a model chunk");
  SB_USER_CHECK(micro_batches >= 1 && micro_batches * v <= kMaxMicroBatches,
                "a pipeline step needs between 1 and {} micro-batches × chunks, got {} × {}", kMaxMicroBatches,
                micro_batches, v);
  SB_CHECK(options.receive_depth >= 1, "pipeline receive depth {}", options.receive_depth);
  ops_ = plan::pipeline_stage_ops(schedule, stages_, stage_, micro_batches, v);
  std::vector<plan::PipelineOp> input_order, gradient_order;
  // A mailbox's buffers hold the largest message any of its chunks receives (the ResNet's chunk
  // boundaries differ in size; the GPT's are all (B, T, C)).
  i64 input_bytes = 0, gradient_bytes = 0;
  for (const plan::PipelineOp& op : ops_) {
    const PipelineStage& chunk = *chunks_[static_cast<std::size_t>(op.chunk)];
    if (!receives(op)) continue;
    if (op.kind == plan::PipelineOpKind::forward) {
      input_order.push_back(op);
      input_bytes = std::max(input_bytes, chunk.input_bytes());
    } else {
      gradient_order.push_back(op);
      gradient_bytes = std::max(gradient_bytes, chunk.output_bytes());
    }
  }
  const std::vector<i64> peaks = plan::pipeline_chunk_peaks_in_flight(schedule, stages_, stage_, micro_batches, v);
  for (i64 k = 0; k < v; ++k) {
    const i64 peak = peaks[static_cast<std::size_t>(k)];
    const PipelineStage& chunk = *chunks_[static_cast<std::size_t>(k)];
    SB_CHECK(chunk.activation_slots() >= peak,
             "pipeline stage {} chunk {} holds {} activation slots but {} with {} micro-batches needs {}", stage_, k,
             chunk.activation_slots(), to_string(schedule), micro_batches, peak);
  }
  measure_transfers(options);

  if (!input_order.empty()) {
    inputs_ = std::make_unique<Mailbox>(pp, gradient_peer(), input_bytes, options.receive_depth,
                                        std::move(input_order), pipeline_activation_tag, v, tracker,
                                        "pipeline activation receive");
  }
  if (!gradient_order.empty()) {
    gradients_ = std::make_unique<Mailbox>(pp, activation_peer(), gradient_bytes, options.receive_depth,
                                           std::move(gradient_order), pipeline_gradient_tag, v, tracker,
                                           "pipeline gradient receive");
  }
  for (PipelineStage* chunk : chunks_)
    activation_sends_.emplace_back(static_cast<std::size_t>(chunk->activation_slots()));
}

bool PipelineExecutor::receives(const plan::PipelineOp& op) const {
  if (op.kind == plan::PipelineOpKind::forward) return stage_ > 0 || op.chunk > 0;
  return stage_ + 1 < stages_ || op.chunk + 1 < interleave();
}

bool PipelineExecutor::sends(const plan::PipelineOp& op) const {
  if (op.kind == plan::PipelineOpKind::forward) return stage_ + 1 < stages_ || op.chunk + 1 < interleave();
  return stage_ > 0 || op.chunk > 0;
}

// The receiver's chunk: the same on the next rank, the next one from the last rank to rank 0.
int PipelineExecutor::sent_activation_tag(const plan::PipelineOp& op) const {
  return pipeline_activation_tag(op.micro, stage_ + 1 < stages_ ? op.chunk : op.chunk + 1, interleave());
}

int PipelineExecutor::sent_gradient_tag(const plan::PipelineOp& op) const {
  return pipeline_gradient_tag(op.micro, stage_ > 0 ? op.chunk : op.chunk - 1, interleave());
}

PipelineExecutor::~PipelineExecutor() = default;

// Link l joins stages l and l + 1, taken in order so that no rank waits on one that waits on
// it; under interleaving a last link joins the last stage (sending activations) to the first,
// after both have done their others. On each: the sizes are checked to agree, then (unless the
// options give the model) the sending stage times round trips of the real message size and
// tells the receiving one the result.
void PipelineExecutor::measure_transfers(const PipelineExecutorOptions& options) {
  const bool modelled = options.p2p_latency_s >= 0 && options.p2p_bandwidth_bytes_per_s > 0;
  const auto model = [&](i64 bytes) {
    return options.p2p_latency_s + static_cast<double>(bytes) / options.p2p_bandwidth_bytes_per_s;
  };
  // Blocking sends and receives that yield while they wait: ranks not on the link being timed
  // must leave the cores to the two that are.
  const auto send = [&](const void* data, i64 count, DataType type, int peer, int tag) {
    Request request = pp_.isend(data, count, type, peer, tag);
    wait_yielding(request);
  };
  const auto recv = [&](void* data, i64 count, DataType type, int peer, int tag) {
    Request request = pp_.irecv(data, count, type, peer, tag);
    wait_yielding(request);
  };
  const auto link = [&](int lower, int upper, i64 bytes) {  // this rank is lower or upper
    const bool is_lower = stage_ == lower;
    const int peer = is_lower ? upper : lower;
    i64 theirs = 0;
    if (is_lower) {
      send(&bytes, 1, DataType::i64, peer, kSizeTag);
      recv(&theirs, 1, DataType::i64, peer, kSizeTag);
    } else {
      recv(&theirs, 1, DataType::i64, peer, kSizeTag);
      send(&bytes, 1, DataType::i64, peer, kSizeTag);
    }
    SB_CHECK(theirs == bytes,
             "pipeline stage {} sends {} bytes per micro-batch but stage {} receives {}", lower,
             is_lower ? bytes : theirs, upper, is_lower ? theirs : bytes);
    if (modelled) return model(bytes);
    std::vector<std::byte> message(static_cast<std::size_t>(bytes));
    const std::function<void()> round_trip = [&] {
      if (is_lower) {
        send(message.data(), bytes, DataType::u8, peer, kPingPongTag);
        recv(message.data(), bytes, DataType::u8, peer, kPingPongTag);
      } else {
        recv(message.data(), bytes, DataType::u8, peer, kPingPongTag);
        send(message.data(), bytes, DataType::u8, peer, kPingPongTag);
      }
    };
    measure::HostClock clock;
    const std::vector<double> round_trips = measure::time_rounds(
        round_trip, {.warmups = kPingPongWarmup, .rounds = options.ping_pong_repetitions, .iterations = 1}, clock);
    double one_way = is_lower ? measure::statistics_of(round_trips).median / 2 : 0.0;
    if (is_lower)
      send(&one_way, 1, DataType::f64, peer, kSizeTag);
    else
      recv(&one_way, 1, DataType::f64, peer, kSizeTag);
    return one_way;
  };
  // The ping-pong's records are set-up, not a step's traffic.
  const bool recording = pp_.stats().enabled();
  pp_.stats().set_enabled(false);
  const PipelineStage& first_chunk = *chunks_.front();
  if (stage_ > 0) input_transfer_s_ = link(stage_ - 1, stage_, first_chunk.input_bytes());
  if (stage_ + 1 < stages_) gradient_transfer_s_ = link(stage_, stage_ + 1, first_chunk.output_bytes());
  if (interleave() > 1 && stage_ == 0) input_transfer_s_ = link(stages_ - 1, 0, chunks_[1]->input_bytes());
  if (interleave() > 1 && stage_ + 1 == stages_) gradient_transfer_s_ = link(stages_ - 1, 0, first_chunk.output_bytes());
  pp_.stats().set_enabled(recording);
}

// Copies the chunk's input gradient into a free send buffer (a new one when all are in
// flight) and sends it to the previous chunk.
const void* PipelineExecutor::send_gradient(const plan::PipelineOp& op, PipelineStepFigures& figures) {
  const PipelineStage& chunk = *chunks_[static_cast<std::size_t>(op.chunk)];
  const i64 bytes = chunk.input_bytes();
  SendBuffer* free = nullptr;
  for (SendBuffer& buffer : gradient_sends_) {
    if (buffer.memory.bytes() >= bytes && buffer.request.test()) {
      free = &buffer;
      break;
    }
  }
  if (!free) {
    gradient_sends_.push_back({TrackedBuffer(tracker_, MemoryCategory::comm, bytes, "pipeline gradient send"),
                               Request()});
    free = &gradient_sends_.back();
  }
  const auto* gradient = static_cast<const std::byte*>(chunk.input_gradient());
  std::byte* message = free->memory.as<std::byte>();
  std::copy(gradient, gradient + bytes, message);
  free->request = pp_.isend(message, bytes, DataType::u8, gradient_peer(), sent_gradient_tag(op));
  figures.bytes_sent += bytes;
  return message;
}

PipelineStepFigures PipelineExecutor::run_step() {
  PipelineStepFigures f;
  f.start_s = comm_clock_seconds();
  // The first stage's last backward is the step's last operation (it depends on every
  // other's); it tells the others when it has finished.
  std::int32_t step_end = 0;
  Request step_end_request;
  if (stage_ > 0) step_end_request = pp_.irecv(&step_end, 1, DataType::i32, 0, kStepEndTag);
  if (inputs_) inputs_->start_step();
  if (gradients_) gradients_->start_step();
  const auto v = static_cast<std::size_t>(interleave());
  const auto m = static_cast<std::size_t>(micro_batches_);
  std::vector<std::vector<i64>> free_slots(v);  // per chunk, a stack: the lowest slot on top
  for (std::size_t k = 0; k < v; ++k)
    for (i64 s = chunks_[k]->activation_slots(); s-- > 0;) free_slots[k].push_back(s);
  std::vector<i64> slot_of(v * m, -1);  // at [chunk·m + micro]
  double loss_sum = 0;
  i64 in_use = 0, activation_bytes = 0;
  const bool last = stage_ + 1 == stages_;

  for (const plan::PipelineOp& op : ops_) {
    PipelineOpRecord record{op, 0, comm_clock_seconds(), 0, 0, 0};
    const auto chunk = static_cast<std::size_t>(op.chunk);
    PipelineStage& model = *chunks_[chunk];
    const std::size_t at = chunk * m + static_cast<std::size_t>(op.micro);
    if (op.kind == plan::PipelineOpKind::forward) {
      SB_CHECK(!free_slots[chunk].empty(), "pipeline stage {}: no free activation slot for micro-batch {} of chunk {}",
               stage_, op.micro, op.chunk);
      const i64 slot = free_slots[chunk].back();
      free_slots[chunk].pop_back();
      slot_of[at] = slot;
      f.peak_slots_in_use = std::max(f.peak_slots_in_use, ++in_use);
      activation_bytes += model.slot_activation_bytes();
      f.peak_activation_bytes = std::max(f.peak_activation_bytes, activation_bytes);
      record.slot = slot;
      // The slot's previous output reached the next chunk before this slot was freed (its
      // backward needed the answer); completing the request only records it.
      activation_sends_[chunk][static_cast<std::size_t>(slot)].wait();
      const void* input = nullptr;
      if (receives(op)) {
        input = inputs_->wait(op);
        record.transfer_s = input_transfer_s_;
        f.bytes_received += model.input_bytes();
      }
      record.start_s = comm_clock_seconds();
      const double loss = model.forward(slot, op.micro, input);
      Kokkos::fence();
      record.end_s = comm_clock_seconds();
      f.forward_s += record.end_s - record.start_s;
      if (last && chunk + 1 == v) loss_sum += loss;
      if (receives(op)) inputs_->release();
      if (sends(op)) {
        const i64 bytes = model.output_bytes();
        activation_sends_[chunk][static_cast<std::size_t>(slot)] =
            pp_.isend(model.output(slot), bytes, DataType::u8, activation_peer(), sent_activation_tag(op));
        f.bytes_sent += bytes;
      }
    } else {
      const i64 slot = slot_of[at];
      SB_CHECK(slot >= 0, "pipeline stage {}: backward of micro-batch {} of chunk {} before its forward", stage_,
               op.micro, op.chunk);
      record.slot = slot;
      const void* doutput = nullptr;
      if (receives(op)) {
        doutput = gradients_->wait(op);
        record.transfer_s = gradient_transfer_s_;
        f.bytes_received += model.output_bytes();
      }
      record.start_s = comm_clock_seconds();
      model.backward(slot, op.micro, doutput);
      if (sends(op)) send_gradient(op, f);  // the copy counts as backward work
      Kokkos::fence();
      record.end_s = comm_clock_seconds();
      f.backward_s += record.end_s - record.start_s;
      if (receives(op)) gradients_->release();
      free_slots[chunk].push_back(slot);
      --in_use;
      activation_bytes -= model.slot_activation_bytes();
    }
    const double wait = record.start_s - record.wait_start_s;
    f.wait_s += wait;
    f.p2p_s += std::min(wait, record.transfer_s);
    f.ops.push_back(record);
  }

  // The sends still in flight: the last gradient to the previous stage, the last outputs.
  const double drain_start = comm_clock_seconds();
  double drain_transfer = 0;
  for (SendBuffer& buffer : gradient_sends_) {
    if (!buffer.request.test()) drain_transfer = std::max(drain_transfer, input_transfer_s_);
    wait_yielding(buffer.request);
  }
  for (std::vector<Request>& chunk_sends : activation_sends_) {
    for (Request& request : chunk_sends) {
      if (!request.test()) drain_transfer = std::max(drain_transfer, gradient_transfer_s_);
      wait_yielding(request);
    }
  }
  const double drain = comm_clock_seconds() - drain_start;
  f.p2p_s += std::min(drain, drain_transfer);
  // The wait for the first stage's end: the drain of the pipeline, all bubble.
  if (stage_ == 0) {
    std::vector<Request> ends;
    for (int s = 1; s < stages_; ++s) ends.push_back(pp_.isend(&step_end, 1, DataType::i32, s, kStepEndTag));
    for (Request& request : ends) wait_yielding(request);
  } else {
    wait_yielding(step_end_request);
  }
  f.end_s = comm_clock_seconds();
  f.wait_s += f.end_s - drain_start;
  if (last) f.loss = loss_sum / static_cast<double>(micro_batches_);
  return f;
}

}  // namespace sb::train
