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

int pipeline_activation_tag(i64 micro) { return static_cast<int>(2 * micro); }
int pipeline_gradient_tag(i64 micro) { return static_cast<int>(2 * micro + 1); }

// Receives from one neighbour, in the order this stage consumes them, at most `depth` posted at
// once, each into its own buffer until the operation that reads it has finished.
class PipelineExecutor::Mailbox {
 public:
  Mailbox(parallel::Communicator& comm, int peer, i64 bytes, int depth, std::vector<i64> order,
          int (*tag)(i64), MemoryTracker& tracker, const std::string& label)
      : comm_(comm), peer_(peer), bytes_(bytes), order_(std::move(order)), tag_(tag) {
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

  // Blocks until micro-batch `micro`'s message (the next one in order) has arrived.
  const void* wait(i64 micro) {
    SB_CHECK(!posted_.empty() && posted_.front().micro == micro,
             "pipeline mailbox: micro-batch {} consumed out of the schedule's order", micro);
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

  i64 bytes() const { return bytes_; }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  void post() {
    while (!free_.empty() && next_ < order_.size()) {
      const std::size_t buffer = free_.back();
      free_.pop_back();
      const i64 micro = order_[next_++];
      posted_.push_back({micro, buffer,
                         comm_.irecv(buffers_[buffer].data(), bytes_, DataType::u8, peer_, tag_(micro))});
    }
  }

  struct Posted {
    i64 micro;
    std::size_t buffer;
    Request request;
  };
  parallel::Communicator& comm_;
  int peer_;
  i64 bytes_;
  std::vector<i64> order_;  // micro-batch of each message, in the order they are consumed
  int (*tag_)(i64);
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
    : pp_(pp),
      stage_model_(stage),
      schedule_(schedule),
      micro_batches_(micro_batches),
      tracker_(tracker),
      stage_(pp.rank()),
      stages_(pp.size()) {
  SB_USER_CHECK(micro_batches >= 1 && micro_batches <= kMaxMicroBatches,
                "a pipeline step needs between 1 and {} micro-batches, got {}", kMaxMicroBatches,
                micro_batches);
  SB_CHECK(options.receive_depth >= 1, "pipeline receive depth {}", options.receive_depth);
  ops_ = plan::pipeline_stage_ops(schedule, stages_, stage_, micro_batches);
  const i64 peak = plan::pipeline_peak_in_flight(schedule, stages_, stage_, micro_batches);
  SB_CHECK(stage.activation_slots() >= peak,
           "pipeline stage {} holds {} activation slots but {} with {} micro-batches needs {}", stage_,
           stage.activation_slots(), to_string(schedule), micro_batches, peak);
  measure_transfers(options);

  std::vector<i64> input_order, gradient_order;
  for (const plan::PipelineOp& op : ops_) {
    (op.kind == plan::PipelineOpKind::forward ? input_order : gradient_order).push_back(op.micro);
  }
  if (stage_ > 0) {
    inputs_ = std::make_unique<Mailbox>(pp, stage_ - 1, stage.input_bytes(), options.receive_depth,
                                        std::move(input_order), pipeline_activation_tag, tracker,
                                        "pipeline activation receive");
  }
  if (stage_ + 1 < stages_) {
    gradients_ = std::make_unique<Mailbox>(pp, stage_ + 1, stage.output_bytes(), options.receive_depth,
                                           std::move(gradient_order), pipeline_gradient_tag, tracker,
                                           "pipeline gradient receive");
  }
  activation_sends_.resize(static_cast<std::size_t>(stage.activation_slots()));
}

PipelineExecutor::~PipelineExecutor() = default;

// Link l joins stages l and l + 1, taken in order so that no rank waits on one that waits on
// it. On each: the sizes are checked to agree, then (unless the options give the model) the
// lower stage times round trips of the real message size and tells the upper one the result.
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
  const auto link = [&](int lower, i64 bytes) {  // this rank is lower or lower + 1
    const bool is_lower = stage_ == lower;
    const int peer = is_lower ? lower + 1 : lower;
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
             is_lower ? bytes : theirs, lower + 1, is_lower ? theirs : bytes);
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
  if (stage_ > 0) input_transfer_s_ = link(stage_ - 1, stage_model_.input_bytes());
  if (stage_ + 1 < stages_) gradient_transfer_s_ = link(stage_, stage_model_.output_bytes());
  pp_.stats().set_enabled(recording);
}

// Copies the stage's input gradient into a free send buffer (a new one when all are in
// flight) and sends it to the previous stage.
const void* PipelineExecutor::send_gradient(i64 micro, PipelineStepFigures& figures) {
  SendBuffer* free = nullptr;
  for (SendBuffer& buffer : gradient_sends_) {
    if (buffer.request.test()) {
      free = &buffer;
      break;
    }
  }
  const i64 bytes = stage_model_.input_bytes();
  if (!free) {
    gradient_sends_.push_back({TrackedBuffer(tracker_, MemoryCategory::comm, bytes, "pipeline gradient send"),
                               Request()});
    free = &gradient_sends_.back();
  }
  const auto* gradient = static_cast<const std::byte*>(stage_model_.input_gradient());
  std::byte* message = free->memory.as<std::byte>();
  std::copy(gradient, gradient + bytes, message);
  free->request = pp_.isend(message, bytes, DataType::u8, stage_ - 1, pipeline_gradient_tag(micro));
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
  const i64 slots = stage_model_.activation_slots();
  std::vector<i64> free_slots;  // a stack: the lowest slot on top
  for (i64 s = slots; s-- > 0;) free_slots.push_back(s);
  std::vector<i64> slot_of(static_cast<std::size_t>(micro_batches_), -1);
  double loss_sum = 0;
  i64 in_use = 0;
  const bool first = stage_ == 0, last = stage_ + 1 == stages_;

  for (const plan::PipelineOp& op : ops_) {
    PipelineOpRecord record{op, 0, comm_clock_seconds(), 0, 0, 0};
    const auto micro = static_cast<std::size_t>(op.micro);
    if (op.kind == plan::PipelineOpKind::forward) {
      SB_CHECK(!free_slots.empty(), "pipeline stage {}: no free activation slot for micro-batch {}", stage_,
               op.micro);
      const i64 slot = free_slots.back();
      free_slots.pop_back();
      slot_of[micro] = slot;
      f.peak_slots_in_use = std::max(f.peak_slots_in_use, ++in_use);
      record.slot = slot;
      // The slot's previous output reached the next stage before this slot was freed (its
      // backward needed the answer); completing the request only records it.
      activation_sends_[static_cast<std::size_t>(slot)].wait();
      const void* input = nullptr;
      if (!first) {
        input = inputs_->wait(op.micro);
        record.transfer_s = input_transfer_s_;
        f.bytes_received += inputs_->bytes();
      }
      record.start_s = comm_clock_seconds();
      const double loss = stage_model_.forward(slot, op.micro, input);
      Kokkos::fence();
      record.end_s = comm_clock_seconds();
      f.forward_s += record.end_s - record.start_s;
      if (last) loss_sum += loss;
      if (!first) inputs_->release();
      if (!last) {
        const i64 bytes = stage_model_.output_bytes();
        activation_sends_[static_cast<std::size_t>(slot)] =
            pp_.isend(stage_model_.output(slot), bytes, DataType::u8, stage_ + 1, pipeline_activation_tag(op.micro));
        f.bytes_sent += bytes;
      }
    } else {
      const i64 slot = slot_of[micro];
      SB_CHECK(slot >= 0, "pipeline stage {}: backward of micro-batch {} before its forward", stage_, op.micro);
      record.slot = slot;
      const void* doutput = nullptr;
      if (!last) {
        doutput = gradients_->wait(op.micro);
        record.transfer_s = gradient_transfer_s_;
        f.bytes_received += gradients_->bytes();
      }
      record.start_s = comm_clock_seconds();
      stage_model_.backward(slot, op.micro, doutput);
      if (!first) send_gradient(op.micro, f);  // the copy counts as backward work
      Kokkos::fence();
      record.end_s = comm_clock_seconds();
      f.backward_s += record.end_s - record.start_s;
      if (!last) gradients_->release();
      free_slots.push_back(slot);
      --in_use;
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
  for (Request& request : activation_sends_) {
    if (!request.test()) drain_transfer = std::max(drain_transfer, gradient_transfer_s_);
    wait_yielding(request);
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
  f.peak_activation_bytes = f.peak_slots_in_use * stage_model_.slot_activation_bytes();
  if (last) f.loss = loss_sum / static_cast<double>(micro_batches_);
  return f;
}

}  // namespace sb::train
