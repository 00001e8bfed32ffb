// SPDX-License-Identifier: Apache-2.0
// Vocabulary-parallel embedding and cross-entropy: the shards of an uneven split (V = 13 over
// 3 ranks: 4, 4, 5 rows), combined as the tp group's all-reduces would combine them (max of
// the row maxima, sums of the partials and of the embedding outputs), against the unsplit
// kernels; for reference<double>, reference<float> and cpu. Leaves out communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/rng.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::testing {
namespace {

constexpr i64 kB = 2, kT = 3, kBT = kB * kT, kV = 13, kC = 5, kRanks = 3;
// Shard r holds rows [r·V/t, (r+1)·V/t), as GptPartition splits the vocabulary.
i64 shard_begin(i64 r) { return r * kV / kRanks; }
i64 shard_rows(i64 r) { return shard_begin(r + 1) - shard_begin(r); }

// float32 one-rank kernels and three-shard kernels sum in different orders; double is exact to
// rounding. Measured errors are ~1e-7 (float) and ~1e-16 (double).
template <class T>
double tolerance() { return sizeof(T) == 4 ? 2e-6 : 1e-12; }

template <class T>
struct Kernels {
  decltype(&reference::crossentropy_forward<T>) ce_forward;
  decltype(&reference::crossentropy_backward<T>) ce_backward;
  decltype(&reference::crossentropy_shard_max<T>) shard_max;
  decltype(&reference::crossentropy_shard_partials<T>) shard_partials;
  decltype(&reference::crossentropy_shard_finish<T>) shard_finish;
  decltype(&reference::crossentropy_shard_backward<T>) shard_backward;
  decltype(&reference::embedding_forward<T>) emb_forward;
  decltype(&reference::embedding_backward<T>) emb_backward;
  decltype(&reference::embedding_shard_forward<T>) emb_shard_forward;
  decltype(&reference::embedding_shard_backward<T>) emb_shard_backward;
};

template <class T>
Kernels<T> reference_kernels() {
  using namespace reference;
  return {&crossentropy_forward<T>, &crossentropy_backward<T>, &crossentropy_shard_max<T>,
          &crossentropy_shard_partials<T>, &crossentropy_shard_finish<T>,
          &crossentropy_shard_backward<T>, &embedding_forward<T>, &embedding_backward<T>,
          &embedding_shard_forward<T>, &embedding_shard_backward<T>};
}

Kernels<float> cpu_kernels() {
  using namespace cpu;
  return {&crossentropy_forward, &crossentropy_backward, &crossentropy_shard_max,
          &crossentropy_shard_partials, &crossentropy_shard_finish, &crossentropy_shard_backward,
          &embedding_forward, &embedding_backward, &embedding_shard_forward,
          &embedding_shard_backward};
}

template <class T>
std::vector<T> normal(std::uint64_t stream, i64 n, double scale) {
  const CounterRng rng(31, stream);
  std::vector<T> x(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<T>(scale * rng.normal(i));
  return x;
}

std::vector<std::int32_t> ids() {  // every shard hit, the last row of the last shard included
  return {0, 12, 4, 7, 8, 12};
}

template <class T>
void expect_crossentropy_shards_match_unsplit(const Kernels<T>& k) {
  const auto logits = normal<T>(0, kBT * kV, 3.0);  // (BT, V)
  const auto dlosses = normal<T>(1, kBT, 1.0);
  const std::vector<std::int32_t> targets = ids();
  std::vector<T> losses(kBT), probs(kBT * kV), dlogits(kBT * kV, T(0.25));
  k.ce_forward(losses.data(), probs.data(), logits.data(), targets.data(), kBT, kV);
  k.ce_backward(dlogits.data(), probs.data(), targets.data(), dlosses.data(), kBT, kV);

  // each shard's logits (BT, V_r), then the three reductions
  std::vector<std::vector<T>> shard_logits(kRanks);
  std::vector<T> row_max(kBT, -INFINITY), sums(2 * kBT, T(0));
  for (i64 r = 0; r < kRanks; ++r) {
    auto& x = shard_logits[static_cast<std::size_t>(r)];
    for (i64 bt = 0; bt < kBT; ++bt)
      for (i64 j = 0; j < shard_rows(r); ++j) x.push_back(logits[bt * kV + shard_begin(r) + j]);
    std::vector<T> m(kBT);
    k.shard_max(m.data(), x.data(), kBT, shard_rows(r));
    for (i64 i = 0; i < kBT; ++i) row_max[i] = std::max(row_max[i], m[i]);
  }
  for (i64 r = 0; r < kRanks; ++r) {
    std::vector<T> partial(2 * kBT, T(-7));  // stale contents: overwritten
    k.shard_partials(partial.data(), partial.data() + kBT, shard_logits[r].data(), row_max.data(),
                     targets.data(), shard_begin(r), kBT, shard_rows(r));
    for (i64 i = 0; i < 2 * kBT; ++i) sums[i] += partial[i];
  }
  const double tol = tolerance<T>();
  for (i64 r = 0; r < kRanks; ++r) {
    const i64 Vr = shard_rows(r);
    std::vector<T> shard_losses(kBT), shard_probs(kBT * Vr), shard_dlogits(kBT * Vr, T(0.25));
    k.shard_finish(shard_losses.data(), shard_probs.data(), shard_logits[r].data(),
                   row_max.data(), sums.data(), sums.data() + kBT, kBT, Vr);
    k.shard_backward(shard_dlogits.data(), shard_probs.data(), targets.data(), dlosses.data(),
                     shard_begin(r), kBT, Vr);
    for (i64 bt = 0; bt < kBT; ++bt) {
      EXPECT_NEAR(shard_losses[bt], losses[bt], tol * std::abs(losses[bt]) + tol) << "row " << bt;
      for (i64 j = 0; j < Vr; ++j) {
        const i64 g = bt * kV + shard_begin(r) + j;
        EXPECT_NEAR(shard_probs[bt * Vr + j], probs[g], tol) << "rank " << r << " " << bt << "," << j;
        EXPECT_NEAR(shard_dlogits[bt * Vr + j], dlogits[g], tol) << "rank " << r << " " << bt << "," << j;
      }
    }
  }
}

template <class T>
void expect_embedding_shards_match_unsplit(const Kernels<T>& k) {
  const auto wte = normal<T>(2, kV * kC, 1.0), wpe = normal<T>(3, kT * kC, 1.0);
  const auto dout = normal<T>(4, kBT * kC, 1.0);
  const std::vector<std::int32_t> tokens = ids();
  std::vector<T> out(kBT * kC), dwte(kV * kC, T(0.5)), dwpe(kT * kC, T(0.5));
  k.emb_forward(out.data(), tokens.data(), wte.data(), wpe.data(), kB, kT, kC);
  k.emb_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), kB, kT, kC);

  std::vector<T> sum(kBT * kC, T(0));
  for (i64 r = 0; r < kRanks; ++r) {
    const T* wte_r = wte.data() + shard_begin(r) * kC;
    std::vector<T> part(kBT * kC, T(-3));  // stale contents: overwritten
    k.emb_shard_forward(part.data(), tokens.data(), wte_r, r == 0 ? wpe.data() : nullptr,
                        shard_begin(r), shard_rows(r), kB, kT, kC);
    for (i64 i = 0; i < kBT * kC; ++i) sum[i] += part[i];
    std::vector<T> dwte_r(dwte.size(), T(0.5)), dwpe_r(kT * kC, T(0.5));
    k.emb_shard_backward(dwte_r.data(), dwpe_r.data(), dout.data(), tokens.data(), shard_begin(r),
                         shard_rows(r), kB, kT, kC);
    for (i64 i = 0; i < shard_rows(r) * kC; ++i)
      EXPECT_EQ(dwte_r[i], dwte[shard_begin(r) * kC + i]) << "rank " << r << " dwte " << i;
    for (i64 i = shard_rows(r) * kC; i < kV * kC; ++i)
      EXPECT_EQ(dwte_r[i], T(0.5)) << "rank " << r << " wrote past its shard at " << i;
    EXPECT_EQ(dwpe_r, dwpe) << "rank " << r;
    k.emb_shard_backward(dwte_r.data(), nullptr, dout.data(), tokens.data(), shard_begin(r),
                         shard_rows(r), kB, kT, kC);  // no dwpe: skipped
  }
  for (i64 i = 0; i < kBT * kC; ++i) EXPECT_EQ(sum[i], out[i]) << i;  // one non-zero term + wpe
}

TEST(VocabParallelKernels, CrossEntropyShardsMatchUnsplit) {
  expect_crossentropy_shards_match_unsplit(reference_kernels<double>());
  expect_crossentropy_shards_match_unsplit(reference_kernels<float>());
  expect_crossentropy_shards_match_unsplit(cpu_kernels());
}

TEST(VocabParallelKernels, EmbeddingShardsMatchUnsplit) {
  expect_embedding_shards_match_unsplit(reference_kernels<double>());
  expect_embedding_shards_match_unsplit(reference_kernels<float>());
  expect_embedding_shards_match_unsplit(cpu_kernels());
}

}  // namespace
}  // namespace sb::kernels::testing
