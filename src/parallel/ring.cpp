// SPDX-License-Identifier: Apache-2.0
// Ring reduce-scatter / all-gather / all-reduce as a state machine advanced by test(), over
// floats and (all-reduce) 16-bit floats.
#include "parallel/ring.hpp"

#include <memory>
#include <vector>

#include "core/check.hpp"
#include "parallel/fault.hpp"
#include "precision/rounded_sum.hpp"

namespace sb::parallel {

namespace {

// Segment i of a buffer of `count` split in n: [i·count/n, (i+1)·count/n).
// Reduce-scatter step s on rank r sends segment (r − s + o) and adds the received (r − s − 1 + o);
// after n − 1 steps rank r holds the full sum of segment (r + 1 + o). The all-gather then
// passes the completed segments on: step s sends (r + 1 + o − s) and receives (r + o − s).
// o = 0 is the textbook all-reduce; o = −1 leaves rank r with segment r (ZeRO's layout).
template <class T>
class Ring final : public Request::Impl {
 public:
  Ring(Communicator& comm, T* data, std::int64_t count, int tag, bool reduce_scatter, bool all_gather,
       int offset, Collective collective, std::int64_t* bytes_sent)
      : comm_(comm), data_(data), count_(count), tag_(tag), n_(comm.size()), r_(comm.rank()),
        offset_(offset), bytes_sent_(bytes_sent) {
    record_.collective = collective;
    record_.bytes = count * static_cast<std::int64_t>(sizeof(T));
    record_.ranks = n_;
    record_.start_s = comm_clock_seconds();
    record_.blocking = false;
    record_.algorithm = "ring";
    if (reduce_scatter) phases_.push_back(Phase::reduce_scatter);
    if (all_gather) phases_.push_back(Phase::all_gather);
    scratch_.resize(static_cast<std::size_t>(count / n_ + 1));
    if (n_ > 1) {
      CommStats& stats = comm.stats();
      const bool recording = stats.enabled();
      stats.set_enabled(false);
      post();
      stats.set_enabled(recording);
    } else {
      complete_ = true;
    }
  }

  // The ring's own messages are not recorded one by one (the call is one record): recording
  // is off while they progress and complete.
  bool test() override {
    if (done_) return true;
    CommStats& stats = comm_.stats();
    const bool recording = stats.enabled();
    stats.set_enabled(false);
    try {
      advance();
    } catch (...) {
      stats.set_enabled(recording);
      throw;
    }
    stats.set_enabled(recording);
    if (complete_) finish();
    return done_;
  }

  void wait() override {
    if (!done_ && record_.wait_start_s < 0) record_.wait_start_s = comm_clock_seconds();
    int polls = 0;
    while (!test())
      if (++polls % 1024 == 0) throw_if_job_failing();
  }

 private:
  enum class Phase { reduce_scatter, all_gather };

  void advance() {
    while (!complete_ && send_.test() && receive_.test()) {
      if (phases_[phase_] == Phase::reduce_scatter) {  // add the received partial sums
        const auto [begin, end] = segment(receiving_);
        add_rounded(data_ + begin, scratch_.data(), end - begin);
      }
      if (++step_ == n_ - 1) {
        step_ = 0;
        ++phase_;
      }
      if (phase_ == phases_.size()) complete_ = true;
      else post();
    }
  }

  std::pair<std::int64_t, std::int64_t> segment(int i) const {
    return {i * count_ / n_, (i + 1) * count_ / n_};
  }
  int wrap(int i) const { return ((i % n_) + n_) % n_; }

  void post() {
    const bool reducing = phases_[phase_] == Phase::reduce_scatter;
    const int sending = reducing ? wrap(r_ - step_ + offset_) : wrap(r_ + 1 + offset_ - step_);
    receiving_ = reducing ? wrap(r_ - step_ - 1 + offset_) : wrap(r_ + offset_ - step_);
    const auto [send_begin, send_end] = segment(sending);
    const auto [receive_begin, receive_end] = segment(receiving_);
    const int left = wrap(r_ - 1), right = wrap(r_ + 1);
    T* into = reducing ? scratch_.data() : data_ + receive_begin;
    receive_ = comm_.irecv(into, receive_end - receive_begin, data_type_of<T>(), left, tag_);
    send_ = comm_.isend(data_ + send_begin, send_end - send_begin, data_type_of<T>(), right, tag_);
    if (bytes_sent_) *bytes_sent_ += (send_end - send_begin) * static_cast<std::int64_t>(sizeof(T));
  }

  void finish() {
    done_ = true;
    comm_.stats().record_completed(std::move(record_));
  }

  Communicator& comm_;
  T* data_;
  std::int64_t count_;
  int tag_, n_, r_, offset_;
  std::int64_t* bytes_sent_;
  std::vector<Phase> phases_;
  std::size_t phase_ = 0;
  int step_ = 0, receiving_ = 0;
  std::vector<T> scratch_;  // one received segment (reduce-scatter)
  Request send_, receive_;
  CommRecord record_;
  bool complete_ = false, done_ = false;
};

}  // namespace

Request ring_iall_reduce(Communicator& comm, float* data, std::int64_t count, int tag, std::int64_t* bytes_sent) {
  return Request(std::make_unique<Ring<float>>(comm, data, count, tag, true, true, 0, Collective::all_reduce, bytes_sent));
}

Request ring_iall_reduce(Communicator& comm, bf16* data, std::int64_t count, int tag, std::int64_t* bytes_sent) {
  return Request(std::make_unique<Ring<bf16>>(comm, data, count, tag, true, true, 0, Collective::all_reduce, bytes_sent));
}

Request ring_iall_reduce(Communicator& comm, fp16* data, std::int64_t count, int tag, std::int64_t* bytes_sent) {
  return Request(std::make_unique<Ring<fp16>>(comm, data, count, tag, true, true, 0, Collective::all_reduce, bytes_sent));
}

Request ring_ireduce_scatter(Communicator& comm, float* buffer, std::int64_t block, int tag,
                             std::int64_t* bytes_sent) {
  return Request(std::make_unique<Ring<float>>(comm, buffer, block * comm.size(), tag, true, false, -1,
                                        Collective::reduce_scatter, bytes_sent));
}

Request ring_iall_gather(Communicator& comm, float* buffer, std::int64_t block, int tag, std::int64_t* bytes_sent) {
  return Request(std::make_unique<Ring<float>>(comm, buffer, block * comm.size(), tag, false, true, -1,
                                        Collective::all_gather, bytes_sent));
}

}  // namespace sb::parallel
