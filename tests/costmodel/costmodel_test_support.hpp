// SPDX-License-Identifier: Apache-2.0
// Builders shared by the cost-model tests: a GPT case in the trainer's config struct and the
// path of a site profile. Leaves out any expectation.
#pragma once

#include <cstdint>
#include <string>

#include "costmodel/site_profile.hpp"
#include "plan/config.hpp"

namespace sb::costmodel::testing {

inline std::string site_path(const std::string& name) {
  return std::string(SB_SOURCE_DIR) + "/jobs/sites/" + name + ".yaml";
}

inline SiteProfile site(const std::string& name) { return load_site_profile(site_path(name)); }
// The profile with its shape-aware GEMM model (`gemm:`) set aside: GEMMs at peak × the flat
// (calibrated, else 1) efficiency, the closed forms the flat-model tests check.
inline SiteProfile flat_site(const std::string& name) {
  SiteProfile p = site(name);
  p.gemm.reset();
  return p;
}
// The profile with its NCCL algorithm figures (`links.<level>.nccl`) set aside: collectives by
// the ring formula over the datasheet link, the closed form the communication tests check
// (test_nccl_collectives.cpp checks the per-algorithm times).
inline SiteProfile ring_formula(SiteProfile p) {
  p.intra_node.nccl.reset();
  p.inter_node.nccl.reset();
  return p;
}

// An inline GPT (sequence 2048 unless said) with the given grid and one micro-batch size.
inline plan::TrainConfig gpt_case(std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                                   std::int64_t dp, std::int64_t tp, std::int64_t pp,
                                   std::int64_t global_batch, std::int64_t micro_batch,
                                   std::string precision = "fp16", std::int64_t vocab = 51200,
                                   std::int64_t seq = 2048) {
  plan::TrainConfig c;
  c.source = "test case";
  c.model.name = "gpt-test";
  c.model.layers = layers;
  c.model.hidden = hidden;
  c.model.heads = heads;
  c.model.seq_len = seq;
  c.model.vocab = vocab;
  c.data.dataset = "sotu";
  c.strategy.dp = dp;
  c.strategy.tp = tp;
  c.strategy.pp = pp;
  c.global_batch = global_batch;
  c.micro_batch = micro_batch;
  c.precision.dtype = std::move(precision);
  // the published fp16 runs (Megatron-LM 2021, the ZeRO paper) keep and reduce 16-bit gradients
  c.precision.main_grads = "storage";
  return c;
}

}  // namespace sb::costmodel::testing
