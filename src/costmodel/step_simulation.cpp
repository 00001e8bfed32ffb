// SPDX-License-Identifier: Apache-2.0
// simulate_step: the stages' op lists from plan/pipeline_schedule.hpp run against each other
// in time, then each stage's gradient buckets and optimizer. Leaves out the costs themselves
// (step_prediction.cpp).
#include "costmodel/step_simulation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/check.hpp"

namespace sb::costmodel {

using i64 = std::int64_t;

const char* to_string(TimelineOpKind kind) {
  switch (kind) {
    case TimelineOpKind::forward: return "forward";
    case TimelineOpKind::backward: return "backward";
    case TimelineOpKind::send_forward: return "send_forward";
    case TimelineOpKind::send_backward: return "send_backward";
    case TimelineOpKind::dp_bucket: return "dp_bucket";
    case TimelineOpKind::optimizer: return "optimizer";
  }
  return "unknown";
}

int rank_stage(int rank, int dp, int tp) { return rank / (dp * tp); }

namespace {

// The pipeline part of a step in flight: each rank's op list, where it is in it, when it is
// free, and when each (micro-batch, chunk)'s activation and output gradient reach it, at
// [chunk·m + micro] (negative: not yet sent; rank 0's chunk-0 inputs and the last rank's
// last-chunk loss gradient are local).
struct PipelineState {
  std::size_t p, v;
  i64 m;
  bool p2p_overlap;  // sends beside the compute: the sender does not wait for its message
  std::vector<std::vector<plan::PipelineOp>> ops;
  std::vector<std::vector<double>> activation_at, gradient_at;
  std::vector<std::vector<bool>> forwarded;
  std::vector<std::size_t> next;
  std::vector<double> free_at;
  std::vector<std::vector<TimelineOp>> last_backward;  // per rank and chunk: backward(m − 1), for the buckets

  PipelineState(const StepSimulationInput& input, std::size_t ranks, i64 micro_batches)
      : p(ranks), v(static_cast<std::size_t>(input.interleave)), m(micro_batches), p2p_overlap(input.p2p_overlap),
        ops(ranks),
        activation_at(ranks, std::vector<double>(v * static_cast<std::size_t>(m), -1.0)), gradient_at(activation_at),
        forwarded(ranks, std::vector<bool>(v * static_cast<std::size_t>(m), false)), next(ranks, 0),
        free_at(ranks, 0.0), last_backward(ranks, std::vector<TimelineOp>(v)) {
    for (std::size_t s = 0; s < p; ++s)
      ops[s] = plan::pipeline_stage_ops(input.schedule, static_cast<int>(p), static_cast<int>(s), m, input.interleave);
    std::fill(activation_at[0].begin(), activation_at[0].begin() + m, 0.0);
  }
  std::size_t at(const plan::PipelineOp& op) const {
    return static_cast<std::size_t>(op.chunk * m + op.micro);
  }
  const StageOpCosts& cost(const StepSimulationInput& input, std::size_t s, const plan::PipelineOp& op) const {
    return input.stages[static_cast<std::size_t>(op.chunk) * p + s];
  }
};

// When rank s's next op can start, or a negative time while its message has not arrived.
double ready_time(const PipelineState& st, std::size_t s, const plan::PipelineOp& op) {
  const std::size_t i = st.at(op);
  if (op.kind == plan::PipelineOpKind::forward) {
    if (st.activation_at[s][i] < 0) return -1;
    return std::max(st.free_at[s], st.activation_at[s][i]);
  }
  SB_CHECK(st.forwarded[s][i], "stage {} runs backward({}) of chunk {} before its forward", s, op.micro, op.chunk);
  if (s + 1 == st.p && static_cast<std::size_t>(op.chunk) + 1 == st.v) return st.free_at[s];
  if (st.gradient_at[s][i] < 0) return -1;
  return std::max(st.free_at[s], st.gradient_at[s][i]);
}

// Rank s's compute stream in flight: waiting for its next op's inputs, running the op's
// compute (until `end` at the node's present load, `length` long at that load), or sending
// its message on (until `end`).
struct Stream {
  enum class Phase { waiting, busy, sending } phase = Phase::waiting;
  double start = 0, end = 0, length = -1;  // length < 0: not priced yet
};

// What rank s's op spends on the compute stream besides its compute, none of it re-priced by
// the node's load: the tp collectives, ZeRO-3's gather waits and the exchange's passes (in a
// backward; the last micro-batch's once more).
struct FixedParts {
  double tp = 0, gather = 0, exchange = 0;
  double total() const { return tp + gather + exchange; }
};
FixedParts fixed_parts(const PipelineState& st, const plan::PipelineOp& op, const StageOpCosts& cost) {
  if (op.kind == plan::PipelineOpKind::forward)
    return {cost.forward_tp_s, !cost.gathers_once || op.micro == 0 ? cost.forward_gather_s : 0.0, 0.0};
  return {cost.backward_tp_s, cost.gathers_once ? 0.0 : cost.backward_gather_s,
          cost.backward_exchange_s + (op.micro == st.m - 1 ? cost.last_backward_exchange_s : 0.0)};
}

// The op's length with k of its node's ranks computing: its compute between the alone and the
// busy cost in proportion to the load, plus the fixed part.
double op_length(const StepSimulationInput& input, const PipelineState& st, const plan::PipelineOp& op,
                 const StageOpCosts& cost, int k) {
  const bool forward = op.kind == plan::PipelineOpKind::forward;
  const double busy = forward ? cost.forward_compute_s : cost.backward_compute_s;
  const double alone_cost = forward ? cost.forward_compute_alone_s : cost.backward_compute_alone_s;
  const double alone = alone_cost < 0 ? busy : alone_cost;
  const int n = input.node_ranks;
  const double share =
      n > 1 && !input.stage_node.empty() ? std::clamp(static_cast<double>(k - 1) / (n - 1), 0.0, 1.0) : 1.0;
  return alone + (busy - alone) * share + fixed_parts(st, op, cost).total();
}

// Rank s's busy op ends at `now`: its record and time by part, then its message to the next
// rank's same chunk (or from the last rank to rank 0's next chunk; gradients back alike).
// Returns the rank its message goes to, none when none goes out (else the stream sends until
// st.free_at[s]).
std::optional<std::size_t> finish_op(PipelineState& st, std::size_t s, const plan::PipelineOp& op,
                                     const StageOpCosts& cost, double start, double now, StageTimeline& tl) {
  const std::size_t i = st.at(op);
  const auto chunk = static_cast<std::size_t>(op.chunk);
  const bool forward = op.kind == plan::PipelineOpKind::forward;
  const TimelineOp done{forward ? TimelineOpKind::forward : TimelineOpKind::backward, op.micro, start, now, op.chunk};
  tl.compute.push_back(done);
  const FixedParts fixed = fixed_parts(st, op, cost);
  tl.compute_s += std::max(0.0, (now - start) - fixed.total());
  tl.tp_s += fixed.tp;
  tl.gather_s += fixed.gather;
  tl.exchange_s += fixed.exchange;
  if (forward) st.forwarded[s][i] = true;
  if (!forward && op.micro == st.m - 1) st.last_backward[s][chunk] = done;
  st.free_at[s] = now;
  const bool sends = forward ? s + 1 < st.p || chunk + 1 < st.v : s > 0 || chunk > 0;
  if (!sends) return std::nullopt;
  const double message = forward ? cost.send_forward_s : cost.send_backward_s;
  const double arrives = now + message;
  const TimelineOp send{forward ? TimelineOpKind::send_forward : TimelineOpKind::send_backward, op.micro, now, arrives,
                        op.chunk};
  if (st.p2p_overlap) {
    tl.comm.push_back(send);  // on its own stream: the stage goes on at once
  } else {
    tl.compute.push_back(send);
    tl.p2p_s += message;
  }
  const std::size_t m = static_cast<std::size_t>(st.m);
  const std::size_t to = forward ? (s + 1 < st.p ? s + 1 : 0) : (s > 0 ? s - 1 : st.p - 1);
  if (forward)
    st.activation_at[to][to > s ? i : i + m] = arrives;  // the last rank's goes to rank 0's next chunk
  else
    st.gradient_at[to][to < s ? i : i - m] = arrives;  // rank 0's goes to the last rank's previous chunk
  if (!st.p2p_overlap) st.free_at[s] = arrives;
  return to;
}

// The ranks computing on each stage's node now; empty when the input says no stage shares a
// node (every op then takes its busy cost, whatever the others do).
std::vector<int> node_loads(const StepSimulationInput& input, const std::vector<Stream>& streams) {
  if (input.stage_node.empty()) return {};
  const int nodes = *std::max_element(input.stage_node.begin(), input.stage_node.end()) + 1;
  std::vector<int> computing(static_cast<std::size_t>(nodes), 0);
  for (std::size_t s = 0; s < streams.size(); ++s)
    if (streams[s].phase == Stream::Phase::busy) computing[static_cast<std::size_t>(input.stage_node[s])] += 1;
  std::vector<int> load(streams.size());
  for (std::size_t s = 0; s < streams.size(); ++s)
    load[s] = computing[static_cast<std::size_t>(input.stage_node[s])] * input.stage_ranks_per_node;
  return load;
}

// Prices each busy op at its node's present load: a new op from now, a running one by the
// share of it left (unchanged when its load is).
void price_busy_ops(const StepSimulationInput& input, const PipelineState& st, std::vector<Stream>& streams,
                    std::vector<double>& due, double now) {
  const std::vector<int> load = node_loads(input, streams);
  for (std::size_t s = 0; s < st.p; ++s) {
    Stream& run = streams[s];
    if (run.phase != Stream::Phase::busy || (load.empty() && run.length >= 0)) continue;
    const plan::PipelineOp& op = st.ops[s][st.next[s]];
    const double length = op_length(input, st, op, st.cost(input, s, op), load.empty() ? 0 : load[s]);
    if (run.length < 0)
      run.end = now + length;
    else if (length != run.length)
      run.end = now + (run.length > 0 ? (run.end - now) / run.length * length : 0.0);
    run.length = length;
    due[s] = run.end;
  }
}

// When stream s next has something to do: a busy op's or a send's end, a waiting stream's next
// op's ready time; infinity while it waits for a message or has no op left.
double due_time(const PipelineState& st, const std::vector<Stream>& streams, std::size_t s) {
  const Stream& run = streams[s];
  if (run.phase != Stream::Phase::waiting) return run.end;
  if (st.next[s] >= st.ops[s].size()) return std::numeric_limits<double>::infinity();
  const double ready = ready_time(st, s, st.ops[s][st.next[s]]);
  return ready >= 0 ? ready : std::numeric_limits<double>::infinity();
}

// Every stream's event due by `now`, in rank order: a ready op starts, a busy op ends (and
// sends), a send ends. `due` holds each stream's due_time, kept current, so a stream not due is
// passed over (and one a message made due by `now` behind this pass is due at the next).
void take_events(const StepSimulationInput& input, PipelineState& st, std::vector<Stream>& streams,
                 std::vector<double>& due, double now, StepSimulation& sim) {
  for (std::size_t s = 0; s < st.p; ++s) {
    if (due[s] > now) continue;
    Stream& run = streams[s];
    if (run.phase == Stream::Phase::busy && run.end <= now) {
      const plan::PipelineOp& op = st.ops[s][st.next[s]];
      const std::optional<std::size_t> to = finish_op(st, s, op, st.cost(input, s, op), run.start, now, sim.stages[s]);
      ++st.next[s];
      run = to ? Stream{Stream::Phase::sending, now, st.free_at[s]} : Stream{};
      if (to) due[*to] = due_time(st, streams, *to);  // the message in its inbox may move its ready time
    }
    if (run.phase == Stream::Phase::sending && run.end <= now) run = Stream{};
    if (run.phase == Stream::Phase::waiting && st.next[s] < st.ops[s].size()) {
      const double ready = ready_time(st, s, st.ops[s][st.next[s]]);
      if (ready >= 0 && ready <= now) {
        run = Stream{Stream::Phase::busy, now, now};
        if (input.stage_node.empty()) {  // no node load to wait for: priced at once
          const plan::PipelineOp& op = st.ops[s][st.next[s]];
          run.length = op_length(input, st, op, st.cost(input, s, op), 0);
          run.end = now + run.length;
        }
      }
    }
    due[s] = due_time(st, streams, s);
  }
}

// The earliest of the streams' due times (never NaN): the next event's. A loop of its own, four
// minima at once, so it runs at the loads' pace rather than one compare's latency per stream.
[[gnu::noinline]] double earliest(const std::vector<double>& due) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  double t[4] = {inf, inf, inf, inf};
  std::size_t i = 0;
  for (; i + 4 <= due.size(); i += 4)
    for (std::size_t k = 0; k < 4; ++k) t[k] = due[i + k] < t[k] ? due[i + k] : t[k];
  for (; i < due.size(); ++i) t[0] = due[i] < t[0] ? due[i] : t[0];
  return std::min(std::min(t[0], t[1]), std::min(t[2], t[3]));
}

// Runs every stage's op list against the others in time: at each event the streams due start,
// end or send, and the busy ops are re-priced by their nodes' loads (where stages share nodes),
// until no stream has an op left it can run.
void run_pipeline(const StepSimulationInput& input, PipelineState& st, StepSimulation& sim) {
  std::vector<Stream> streams(st.p);
  std::vector<double> due(st.p);
  for (std::size_t s = 0; s < st.p; ++s) due[s] = due_time(st, streams, s);
  // each time the next stream is due (the same time again while one is still due then): its
  // events, and the busy ops re-priced by their nodes' loads where stages share nodes (else
  // each op is priced as it starts)
  const bool loads = !input.stage_node.empty();
  for (double now = 0; std::isfinite(now); now = earliest(due)) {
    take_events(input, st, streams, due, now, sim);
    if (loads) price_busy_ops(input, st, streams, due, now);
  }
  for (std::size_t s = 0; s < st.p; ++s)
    SB_CHECK(st.next[s] == st.ops[s].size(), "the {} schedule deadlocks on stage {} of {}",
             plan::to_string(input.schedule), s, st.p);
}

// One backward's gradient buckets on the serial comm stream: bucket k is ready at
// r_k = start + length·F_k (F_k the share of the bytes produced once its last byte is; length 0
// without overlap: all ready at the backward's end) and takes d_k, so with the stream free at c
// the last one ends at max(c + Σd, max_k (r_k + Σ_{j≥k} d_j)), the first starts at max(c, r_0).
// The max over k depends on the length alone (the same for most of a chunk's backwards): the
// scan runs again only when it changes.
class BucketBatches {
 public:
  explicit BucketBatches(const StageOpCosts& cost) : cost_(cost) {
    SB_CHECK(cost.bucket_bytes.size() == cost.bucket_s.size(), "{} bucket sizes, {} times", cost.bucket_bytes.size(),
             cost.bucket_s.size());
    for (double b : cost.bucket_bytes) total_bytes_ += b;
    for (double d : cost.bucket_s) seconds_ += d;
  }
  double seconds() const { return seconds_; }
  // The first bucket's start and the last one's end for a backward of `length` starting at
  // `start`, the stream free from `comm_free`.
  std::pair<double, double> run(double start, double length, double comm_free) {
    if (length != length_) {
      length_ = length;
      latest_ = latest_ready_plus_rest(length);
    }
    const double first_ready =
        start + (total_bytes_ > 0 ? length * cost_.bucket_bytes.front() / total_bytes_ : length);
    return {std::max(comm_free, first_ready), std::max(comm_free + seconds_, start + latest_)};
  }

 private:
  // max_k (length·F_k + Σ_{j≥k} d_j), relative to the backward's start
  double latest_ready_plus_rest(double length) const {
    double produced = 0, rest = seconds_, latest = 0;
    for (std::size_t k = 0; k < cost_.bucket_s.size(); ++k) {
      produced += cost_.bucket_bytes[k];
      const double ready = total_bytes_ > 0 ? length * produced / total_bytes_ : length;
      latest = std::max(latest, ready + rest);
      rest -= cost_.bucket_s[k];
    }
    return latest;
  }
  const StageOpCosts& cost_;
  double total_bytes_ = 0, seconds_ = 0;
  double length_ = -1, latest_ = 0;
};

// A backward whose gradients a chunk reduces: its window, in the rank's time.
struct ReducingBackward {
  double start = 0, end = 0;
  i64 micro = 0;
  std::size_t chunk = 0;
};

// The backwards chunk c's buckets reduce: the last micro-batch's, or under ZeRO-2 and 3 every
// micro-batch's (the rank's backward ops of the chunk in tl.compute); without overlap each
// bucket waits for its backward's end, and for the step's last backward (the rank's chunk 0's)
// where only the last micro-batch's gradients are reduced.
void add_reducing_backwards(const StepSimulationInput& input, const PipelineState& st, std::size_t s, std::size_t c,
                            const StageTimeline& tl, std::vector<ReducingBackward>& out) {
  const StageOpCosts& cost = input.stages[c * st.p + s];
  if (cost.bucket_s.empty()) return;
  const bool overlap = input.overlap && !cost.buckets_after_backward;
  const auto add = [&](const TimelineOp& op) { out.push_back({overlap ? op.start : op.end, op.end, op.index, c}); };
  if (!cost.buckets_every_micro_batch) {
    add(st.last_backward[s][overlap ? c : 0]);
    return;
  }
  for (const TimelineOp& op : tl.compute)
    if (op.kind == TimelineOpKind::backward && static_cast<std::size_t>(op.chunk) == c) add(op);
}

// After rank s's pipeline: its chunks' gradient buckets (the comm stream runs one bucket at a
// time, each backward's in the order they are produced, the backwards in time order; one comm op
// a backward, from its first bucket's start to its last one's end), then its optimizer over every
// chunk.
void finish_stage(const StepSimulationInput& input, const PipelineState& st, std::size_t s, StageTimeline& tl) {
  const i64 m = input.micro_batches;
  SB_CHECK(st.ops[s].back() == (plan::PipelineOp{plan::PipelineOpKind::backward, m - 1, 0}),
           "stage {} does not end with the last micro-batch's backward", s);
  tl.pipeline_end = st.free_at[s];
  tl.bubble_s = tl.pipeline_end - (tl.compute_s + tl.tp_s + tl.p2p_s + tl.gather_s + tl.exchange_s);
  tl.peak_in_flight = plan::count_peak_in_flight(st.ops[s]);
  std::vector<ReducingBackward> backwards;
  std::vector<BucketBatches> batches;
  batches.reserve(st.v);
  double optimizer = 0, finish = 0, after_optimizer = 0;
  for (std::size_t c = 0; c < st.v; ++c) {
    const StageOpCosts& cost = input.stages[c * st.p + s];
    batches.emplace_back(cost);
    add_reducing_backwards(input, st, s, c, tl, backwards);
    optimizer += cost.optimizer_s;
    finish += cost.finish_exchange_s;
    after_optimizer += cost.after_optimizer_s;
  }
  // in the order their buckets become ready (without overlap the chunks' all at once, which the
  // serial stream runs back to back in any order)
  std::stable_sort(backwards.begin(), backwards.end(),
                   [](const ReducingBackward& a, const ReducingBackward& b) { return a.start < b.start; });
  double comm_free = 0;
  for (const ReducingBackward& b : backwards) {
    BucketBatches& batch = batches[b.chunk];
    const auto [first, last] = batch.run(b.start, b.end - b.start, comm_free);
    comm_free = last;
    tl.comm.push_back({TimelineOpKind::dp_bucket, b.micro, first, last, static_cast<i64>(b.chunk)});
    tl.dp_s += batch.seconds();
  }
  const double optimizer_start = std::max(tl.pipeline_end, comm_free) + finish;
  tl.dp_exposed_s = optimizer_start - tl.pipeline_end;
  tl.optimizer_s = optimizer;
  tl.after_optimizer_s = after_optimizer;
  tl.compute.push_back({TimelineOpKind::optimizer, 0, optimizer_start, optimizer_start + optimizer});
  tl.end = optimizer_start + optimizer + after_optimizer;
}

}  // namespace

StepSimulation simulate_step(const StepSimulationInput& input) {
  const i64 m = input.micro_batches, v = input.interleave;
  SB_CHECK(v >= 1 && !input.stages.empty() && input.stages.size() % static_cast<std::size_t>(v) == 0,
           "step simulation of {} chunks, {} per rank", input.stages.size(), v);
  const std::size_t p = input.stages.size() / static_cast<std::size_t>(v);
  SB_CHECK(p >= 1 && m >= 1, "step simulation of {} stages and {} micro-batches", p, m);
  SB_CHECK(input.stage_node.empty() ||
               (input.stage_node.size() == p &&
                *std::min_element(input.stage_node.begin(), input.stage_node.end()) >= 0 &&
                input.stage_ranks_per_node >= 1 && input.node_ranks >= 1),
           "step simulation of {} stages: {} node indices, {} ranks of a stage per node, {} on a node", p,
           input.stage_node.size(), input.stage_ranks_per_node, input.node_ranks);
  StepSimulation sim;
  sim.stages.resize(p);
  PipelineState state(input, p, m);
  run_pipeline(input, state, sim);
  for (std::size_t s = 0; s < p; ++s) {
    StageTimeline& tl = sim.stages[s];
    finish_stage(input, state, s, tl);
    sim.pipeline_end = std::max(sim.pipeline_end, tl.pipeline_end);
    if (tl.end > sim.step_time_s) {
      sim.step_time_s = tl.end;
      sim.critical_stage = s;
    }
  }
  sim.idle_s.resize(p);
  for (std::size_t s = 0; s < p; ++s) {
    const StageTimeline& tl = sim.stages[s];
    sim.idle_s[s] = sim.pipeline_end - (tl.compute_s + tl.tp_s + tl.p2p_s + tl.gather_s + tl.exchange_s);
  }
  return sim;
}

}  // namespace sb::costmodel
