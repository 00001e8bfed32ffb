// SPDX-License-Identifier: Apache-2.0
// Fine-tuning and magnitude pruning through `scalebench train`, read back from the HDF5 files:
// a short resnet-mini run on MNIST writes a checkpoint; runs that start from it keep the mask
// of prune (2:4 and global unstructured, ranked on the starting weights) through their steps,
// keep a frozen backbone bit for bit, train on a small labelled subset, and record the
// pruned model's evaluation at step 0. Refusals name the key or file. Leaves out whether
// pruning or transfer pays in accuracy (suites/compression.yaml and suites/transfer.yaml).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cli_harness.hpp"
#include "io/checkpoint_file.hpp"
#include "io/results_reader.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_config.hpp"

namespace sb::testing {
namespace {

const std::string kConfig = std::string(SB_SOURCE_DIR) + "/models/resnet/configs/resnet-mini-mnist.yaml";
// Evaluated on the first kTestImages test images: what these tests compare is the same images
// under two models, not the accuracy of record (the whole 10,000 took 3 s of every run).
constexpr int kTestImages = 1000;
const std::string kShort = " --set epochs=0 --set warmup_steps=0 --set batch.global=16 --set eval_batches=2"
                           " --set threads=1 --set log_every=1000 --set data.test_samples=" +
                           std::to_string(kTestImages);

// A weight matrix of resnet-mini in the flat parameters: (rows, cols) at offset.
struct Matrix {
  std::string name;
  std::size_t offset;
  std::int64_t rows, cols;
};
struct Layout {
  std::vector<Matrix> matrices;
  std::vector<std::pair<std::size_t, std::size_t>> head;  // [begin, end) of fc.weight and fc.bias
};
Layout resnet_mini_layout() {
  Layout layout;
  std::size_t offset = 0;
  for (const auto& spec : resnet::resnet_parameter_specs(resnet::resnet_config_by_name("resnet-mini"))) {
    const auto numel = static_cast<std::size_t>(spec.shape.numel());
    if (spec.shape.rank() >= 2)
      layout.matrices.push_back({spec.name, offset, spec.shape[0], spec.shape.numel() / spec.shape[0]});
    if (spec.name.rfind("fc.", 0) == 0) layout.head.emplace_back(offset, offset + numel);
    offset += numel;
  }
  return layout;
}

class FinetunePrune : public ::testing::Test {
 protected:
  // One pretrained checkpoint for every test of the suite (20 steps, a couple of seconds).
  static void SetUpTestSuite() {
    scratch_ = new Scratch("FinetunePrune");
    base_ = scratch_->path("base.ckpt.h5");
    const auto r = scratch_->run("train --config " + kConfig + kShort + " --set steps=20 --set checkpoint.every=20" +
                                 " --set checkpoint.path=" + base_.string() + " --out " +
                                 scratch_->path("base.h5").string());
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  }
  static void TearDownTestSuite() { delete scratch_; }

  // Fine-tunes from the base for `steps`, with a checkpoint of its own at the end.
  CommandResult finetune(const std::string& name, const std::string& sets, int steps = 6) const {
    return scratch_->run("train --config " + kConfig + kShort + " --set steps=" + std::to_string(steps) +
                         " --set finetune.from=" + base_.string() + sets + " --set checkpoint.every=" +
                         std::to_string(steps) + " --set checkpoint.path=" + scratch_->path(name + ".ckpt.h5").string() +
                         " --out " + scratch_->path(name + ".h5").string());
  }
  std::filesystem::path path(const std::string& name) const { return scratch_->path(name); }

  static Scratch* scratch_;
  static std::filesystem::path base_;
};
Scratch* FinetunePrune::scratch_ = nullptr;
std::filesystem::path FinetunePrune::base_;

TEST_F(FinetunePrune, TwoOfFourMaskRankedOnTheStartIsKeptThroughTraining) {
  const auto r = finetune("two-four", " --set prune.pattern=2:4");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::vector<float> base = checkpoint_parameters(base_), tuned = checkpoint_parameters(path("two-four.ckpt.h5"));
  ASSERT_EQ(base.size(), tuned.size());
  std::int64_t pruned = 0, elements = 0, dense = 0;
  for (const Matrix& m : resnet_mini_layout().matrices) {
    elements += m.rows * m.cols;
    if (m.cols % 4 != 0) {  // the stem's 1·3·3 rows: left dense
      dense += m.rows * m.cols;
      continue;
    }
    for (std::int64_t g = 0; g < m.rows * m.cols; g += 4) {
      std::array<float, 4> start{};
      for (int j = 0; j < 4; ++j) start[j] = std::fabs(base[m.offset + g + j]);
      std::array<float, 4> sorted = start;
      std::sort(sorted.begin(), sorted.end());
      for (int j = 0; j < 4; ++j) {
        const float now = tuned[m.offset + g + j];
        if (start[j] < sorted[2]) {
          EXPECT_EQ(now, 0.0f) << m.name << " element " << g + j << " should have stayed pruned";
          ++pruned;
        } else if (start[j] > sorted[1]) {
          EXPECT_NE(now, 0.0f) << m.name << " element " << g + j << " is one of its group's two largest";
        }
      }
    }
  }
  const std::string summary = "/runs/resnet-mini/summary";
  const std::filesystem::path out = path("two-four.h5");
  EXPECT_EQ(io::read_number_attribute(out, summary, "pruned_weights"), static_cast<double>(pruned));
  EXPECT_NEAR(io::read_number_attribute(out, summary, "sparsity"),
              static_cast<double>(pruned) / static_cast<double>(elements), 1e-12);
  EXPECT_NEAR(static_cast<double>(pruned), 0.5 * static_cast<double>(elements - dense), 0.5);
  // the pruned model before its first fine-tuning step, then after the last
  const auto steps = io::read_column(out, "/runs/resnet-mini/eval", "step");
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.front(), 0);
  EXPECT_EQ(steps.back(), 6);
}

TEST_F(FinetunePrune, GlobalUnstructuredPrunesTheSmallestStartingWeightsOfEveryMatrix) {
  const auto r = finetune("sparse80", " --set prune.sparsity=0.8");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::vector<float> base = checkpoint_parameters(base_), tuned = checkpoint_parameters(path("sparse80.ckpt.h5"));
  std::vector<float> magnitudes;
  for (const Matrix& m : resnet_mini_layout().matrices)
    for (std::int64_t i = 0; i < m.rows * m.cols; ++i) magnitudes.push_back(std::fabs(base[m.offset + i]));
  const auto pruned = static_cast<std::size_t>(std::floor(0.8 * static_cast<double>(magnitudes.size())));
  std::vector<float> sorted = magnitudes;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(pruned), sorted.end());
  const float threshold = sorted[pruned];  // the smallest magnitude kept
  std::size_t zeros = 0, k = 0;
  for (const Matrix& m : resnet_mini_layout().matrices)
    for (std::int64_t i = 0; i < m.rows * m.cols; ++i, ++k) {
      const float now = tuned[m.offset + i];
      zeros += now == 0.0f;
      if (magnitudes[k] < threshold) EXPECT_EQ(now, 0.0f) << m.name << " " << i;
      if (magnitudes[k] > threshold) EXPECT_NE(now, 0.0f) << m.name << " " << i;
    }
  EXPECT_EQ(zeros, pruned);
  EXPECT_NEAR(io::read_number_attribute(path("sparse80.h5"), "/runs/resnet-mini/summary", "sparsity"),
              static_cast<double>(pruned) / static_cast<double>(magnitudes.size()), 1e-12);
}

// 90% global unstructured: the stored weights (each matrix in its smallest sparse layout) are
// over 3× smaller than dense and are summary.weight_bytes; sparse inference from them classifies
// the test set as the dense model does, both timed in the same run. A fine-tuned run without
// pruning keeps the dense fp32 bytes.
TEST_F(FinetunePrune, NinetyPercentPrunedIsStoredOverThreeTimesSmallerAndInfersAsDense) {
  const auto r = finetune("sparse90", " --set prune.sparsity=0.9", 2);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::filesystem::path out = path("sparse90.h5");
  const std::string run = "/runs/resnet-mini", group = run + "/compression";
  const double dense = io::read_number_attribute(out, group, "weight_bytes_dense");
  const double stored = io::read_number_attribute(out, group, "weight_bytes_sparse");
  const double parameters =
      static_cast<double>(resnet::resnet_parameter_count(resnet::resnet_config_by_name("resnet-mini")));
  EXPECT_LT(3 * stored, dense) << io::read_string_attribute(out, group, "sparse_layouts");
  EXPECT_EQ(io::read_number_attribute(out, run + "/summary", "weight_bytes"), stored);
  EXPECT_DOUBLE_EQ(io::read_number_attribute(out, group, "weight_bytes_sparse_ratio"), dense / stored);
  EXPECT_EQ(io::read_string_attribute(out, group, "prune"), "unstructured");
  // the accuracy on kTestImages images: one differing near-tie would show as 1 / kTestImages
  const double accuracy_dense = io::read_number_attribute(out, group, "accuracy_dense");
  EXPECT_NEAR(io::read_number_attribute(out, group, "accuracy_sparse"), accuracy_dense, 1.5 / kTestImages);
  const auto evals = io::read_column(out, run + "/eval", "accuracy");
  const auto splits = io::read_string_column(out, run + "/eval", "split");
  const auto last_test = std::find(splits.rbegin(), splits.rend(), "test");
  ASSERT_NE(last_test, splits.rend());
  EXPECT_NEAR(accuracy_dense, evals[static_cast<std::size_t>(splits.rend() - last_test - 1)], 1e-9)
      << "the dense side is the run's own last test evaluation";
  EXPECT_GT(io::read_number_attribute(out, group, "samples_per_s_dense"), 0);
  EXPECT_GT(io::read_number_attribute(out, group, "samples_per_s_sparse"), 0);
  EXPECT_EQ(io::read_number_attribute(out, group, "sparse_timing_rounds"), 3);

  const auto plain = finetune("plain", "", 2);
  ASSERT_EQ(plain.exit_code, 0) << plain.stderr_text;
  // the parameters and the BatchNorm running statistics, fp32: the unpruned run's stored size
  const double plain_bytes = io::read_number_attribute(path("plain.h5"), run + "/summary", "weight_bytes");
  EXPECT_EQ(plain_bytes, dense);
  EXPECT_GT(plain_bytes, 4 * parameters);
}

TEST_F(FinetunePrune, FrozenBackboneStaysBitForBitWhileTheHeadTrainsOnASubset) {
  const auto r = finetune("frozen", " --set finetune.freeze=backbone --set data.dataset=fashion-mnist"
                                    " --set data.train_samples=64");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::vector<float> base = checkpoint_parameters(base_), tuned = checkpoint_parameters(path("frozen.ckpt.h5"));
  const Layout layout = resnet_mini_layout();
  std::size_t head_changed = 0, head_size = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const bool head = std::any_of(layout.head.begin(), layout.head.end(),
                                  [&](const auto& range) { return i >= range.first && i < range.second; });
    if (head) {
      ++head_size;
      head_changed += tuned[i] != base[i];
    } else {
      ASSERT_EQ(tuned[i], base[i]) << "backbone parameter " << i << " moved";
    }
  }
  EXPECT_GT(head_changed, head_size / 2);
  const std::filesystem::path out = path("frozen.h5");
  EXPECT_EQ(io::read_number_attribute(out, "/runs/resnet-mini/summary", "frozen_parameters"),
            static_cast<double>(base.size() - head_size));
  EXPECT_EQ(io::read_string_attribute(out, "/runs/resnet-mini", "dataset"), "fashion-mnist");
}

// resnet-micro learns from the resnet-mini checkpoint: alpha 0 trains exactly as without a
// teacher (the same losses, bit for bit), alpha 0.9 trains differently; the teacher's file must
// hold the teacher_model.
TEST_F(FinetunePrune, DistillationMixesTheTeachersSoftTargetsIntoTheLoss) {
  const auto student = [&](const std::string& name, const std::string& sets) {
    return scratch_->run("train --config " + kConfig + kShort + " --set steps=4 --set model=resnet-micro" + sets +
                         " --out " + path(name + ".h5").string());
  };
  const std::string teacher = " --set distill.teacher=" + base_.string() + " --set distill.teacher_model=resnet-mini";
  const auto alone = student("alone", ""), zero = student("zero", teacher + " --set distill.alpha=0"),
             taught = student("taught", teacher + " --set distill.alpha=0.9 --set distill.temperature=4");
  ASSERT_EQ(alone.exit_code, 0) << alone.stderr_text;
  ASSERT_EQ(zero.exit_code, 0) << zero.stderr_text;
  ASSERT_EQ(taught.exit_code, 0) << taught.stderr_text;
  const auto losses = [&](const std::string& name) {
    return io::read_column(path(name + ".h5"), "/runs/resnet-micro/steps", "loss");
  };
  EXPECT_EQ(losses("zero"), losses("alone"));
  const auto mixed = losses("taught");
  ASSERT_EQ(mixed.size(), 4u);
  EXPECT_NE(mixed, losses("alone"));
  for (double loss : mixed) EXPECT_TRUE(std::isfinite(loss));
  // weight_bytes counts the student this run produces (its parameters and BatchNorm statistics,
  // fp32), not the teacher it reads
  const auto weight_bytes = [&](const std::string& name) {
    return io::read_number_attribute(path(name + ".h5"), "/runs/resnet-micro/summary", "weight_bytes");
  };
  const double student_parameters =
      static_cast<double>(resnet::resnet_parameter_count(resnet::resnet_config_by_name("resnet-micro")));
  EXPECT_EQ(weight_bytes("taught"), weight_bytes("alone"));
  EXPECT_GT(weight_bytes("alone"), 4 * student_parameters);
  EXPECT_LT(weight_bytes("alone"), 4.1 * student_parameters);
  const auto wrong = student("wrong", " --set distill.teacher=" + base_.string() +
                                          " --set distill.teacher_model=resnet-micro");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.stderr_text.find("distill.teacher " + base_.string() +
                                   " holds a resnet-mini, not the resnet-micro this run needs"),
            std::string::npos)
      << wrong.stderr_text;
}

TEST_F(FinetunePrune, RefusalsNameTheKeyOrFile) {
  const auto missing = finetune("missing", " --set finetune.from=" + path("nope.ckpt.h5").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("finetune.from " + path("nope.ckpt.h5").string() + ": no such checkpoint file"),
            std::string::npos)
      << missing.stderr_text;
  const auto two_four = finetune("bad", " --set prune.pattern=2:4 --set prune.sparsity=0.5");
  EXPECT_EQ(two_four.exit_code, 2);
  EXPECT_NE(two_four.stderr_text.find("'prune.sparsity' is fixed at 0.5 by pattern 2:4"), std::string::npos)
      << two_four.stderr_text;
  const auto subset = finetune("bad", " --set data.train_samples=8");
  EXPECT_EQ(subset.exit_code, 2);
  EXPECT_NE(subset.stderr_text.find("data.train_samples 8 must lie between batch.global (16)"), std::string::npos)
      << subset.stderr_text;
  const auto test_subset = finetune("bad", " --set data.test_samples=10001");
  EXPECT_EQ(test_subset.exit_code, 2);
  EXPECT_NE(test_subset.stderr_text.find("data.test_samples 10001 exceeds the 10000 test images of mnist"),
            std::string::npos)
      << test_subset.stderr_text;
  const auto unpruned = scratch_->run("train --config " + kConfig + kShort + " --set prune.sparsity=0.5 --out " +
                                      path("bad.h5").string());
  EXPECT_EQ(unpruned.exit_code, 2);
  EXPECT_NE(unpruned.stderr_text.find("set finetune.from to the checkpoint to prune"), std::string::npos)
      << unpruned.stderr_text;
  // a GPT checkpoint is not a starting point for resnet-mini
  const auto gpt = scratch_->run("train --config " + std::string(SB_SOURCE_DIR) +
                                 "/models/gpt/configs/gpt-nano-sotu.yaml --set steps=2 --set checkpoint.every=2"
                                 " --set checkpoint.path=" + path("gpt.ckpt.h5").string() + " --out " +
                                 path("gpt.h5").string());
  ASSERT_EQ(gpt.exit_code, 0) << gpt.stderr_text;
  const auto other = finetune("bad", " --set finetune.from=" + path("gpt.ckpt.h5").string());
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.stderr_text.find("holds a gpt-nano, not the resnet-mini this run needs"), std::string::npos)
      << other.stderr_text;
}

}  // namespace
}  // namespace sb::testing
