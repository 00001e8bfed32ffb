// SPDX-License-Identifier: Apache-2.0
// `scalebench train`, `inspect` and `run` end to end on real SOTU text, checked through the
// HDF5 file (never stdout): the schema's tables, exact memory accounting, status.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_harness.hpp"
#include "costmodel/site_profile.hpp"
#include "io/results_reader.hpp"
#include "models/gpt/gpt.hpp"

namespace sb::testing {
namespace {

// compress.quantize: int8 quantises the trained model and records /runs/<id>/compression; the
// summary's weight_bytes is then the int8 model's as stored.
TEST(TrainCommand, Int8CompressionIsRecordedInHdf5) {
  Scratch scratch;
  const auto config = scratch.write("nano.yaml",
                                    "model: gpt-nano\ndata: {dataset: sotu}\nbatch: {global: 8}\nsteps: 40\n"
                                    "eval_batches: 2\nthreads: 1\noptimizer: {lr: 1.0e-3}\n"
                                    "compress: {quantize: int8, calibration_batches: 2}\n");
  const auto out = scratch.path("nano.h5");
  const auto r = scratch.run("train --config " + config.string() + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text << r.stdout_text;
  const std::string group = "/runs/gpt-nano/compression";
  EXPECT_EQ(io::read_string_attribute(out, group, "quantize"), "int8");
  EXPECT_EQ(io::read_number_attribute(out, group, "calibration_batches"), 2);
  const auto n = static_cast<double>(gpt::gpt_parameter_count(gpt::gpt_config_by_name("gpt-nano")));
  EXPECT_EQ(io::read_number_attribute(out, group, "weight_bytes_fp32"), 4 * n);
  const double int8_bytes = io::read_number_attribute(out, group, "weight_bytes_int8");
  EXPECT_LT(int8_bytes, 0.5 * 4 * n);  // gpt-nano: the embeddings (fp32) are a third of it
  EXPECT_EQ(io::read_number_attribute(out, "/runs/gpt-nano/summary", "weight_bytes"), int8_bytes);
  const double fp32_loss = io::read_number_attribute(out, group, "heldout_loss_fp32");
  const double int8_loss = io::read_number_attribute(out, group, "heldout_loss_int8");
  EXPECT_LT(fp32_loss, std::log(256.0) - 1.0);  // it learnt something
  EXPECT_NEAR(int8_loss, fp32_loss, 0.05);
  // the fp32 figure is the same held-out evaluation as the eval table's last row
  const auto eval_loss = io::read_column(out, "/runs/gpt-nano/eval", "loss");
  EXPECT_NEAR(fp32_loss, eval_loss[eval_loss.size() - 2], 1e-5);
  EXPECT_GT(io::read_number_attribute(out, group, "samples_per_s_int8"), 0);
  EXPECT_GT(io::read_number_attribute(out, group, "tokens_per_s_fp32"), 0);
}

TEST(TrainCommand, LlamaStyleModelIsRefusedBeforeAnyWork) {
  Scratch scratch;
  const auto config = scratch.write("llama.yaml", "model: llama3-8b\ndata: sotu\nbatch: {global: 2}\n");
  const CommandResult r = scratch.run("train --config " + config.string() + " --out " +
                                      scratch.path("llama.h5").string());
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("model llama3-8b has Llama-style blocks"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(scratch.path("llama.h5")));
}

TEST(TrainCommand, ShortGptNanoRunIsRecordedInHdf5) {
  Scratch scratch;
  const auto config = scratch.write("nano.yaml",
                                    "model: gpt-nano\ndata: {dataset: sotu}\nbatch: {global: 8, micro: 4}\n"
                                    "steps: 12\neval_every: 6\neval_batches: 2\nthreads: 2\n"
                                    "optimizer: {lr: 1.0e-3, schedule: cosine, min_lr: 1.0e-4}\nwarmup_steps: 2\n");
  const auto out = scratch.path("nano.h5");
  const auto r = scratch.run("train --config " + config.string() + " --out " + out.string() + " --set seed=3");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text << r.stdout_text;
  ASSERT_EQ(io::list_runs(out), std::vector<std::string>{"gpt-nano"});
  const std::string run = "/runs/gpt-nano";
  EXPECT_EQ(io::read_number_attribute(out, "/", "schema_version"), 1);
  EXPECT_EQ(io::read_string_attribute(out, run, "status"), "ok");
  EXPECT_EQ(io::read_string_attribute(out, run, "model"), "gpt-nano");
  EXPECT_EQ(io::read_number_attribute(out, run, "global_batch"), 8);
  EXPECT_EQ(io::read_number_attribute(out, run, "micro_batches"), 2);
  EXPECT_NE(io::read_string_attribute(out, run, "config_yaml").find("seed: 3"), std::string::npos);

  const auto steps = io::read_column(out, run + "/steps", "step");
  ASSERT_EQ(steps.size(), 12u);
  for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i], static_cast<double>(i + 1));  // step k: after k optimizer steps
  const auto loss = io::read_column(out, run + "/steps", "loss");
  EXPECT_NEAR(loss.front(), std::log(256.0), 0.1);  // uniform prediction at initialisation
  EXPECT_LT(loss.back(), loss.front() - 0.5);
  const auto lr = io::read_column(out, run + "/steps", "lr");
  EXPECT_DOUBLE_EQ(lr[0], 5e-4);
  EXPECT_NEAR(lr[11], 1e-4, 1e-12);
  for (double t : io::read_column(out, run + "/steps", "step_time_s")) EXPECT_GT(t, 0);
  for (double tokens : io::read_column(out, run + "/steps", "tokens")) EXPECT_EQ(tokens, 8 * 64);

  const auto split = io::read_string_column(out, run + "/eval", "split");
  const auto eval_step = io::read_column(out, run + "/eval", "step");
  ASSERT_EQ(split.size(), 4u);
  EXPECT_EQ(split[0], "heldout");
  EXPECT_EQ(split[1], "train");
  EXPECT_EQ(eval_step[0], 6);
  EXPECT_EQ(eval_step[3], 12);
  const auto accuracy = io::read_column(out, run + "/eval", "accuracy");
  for (double a : accuracy) EXPECT_TRUE(a > 0 && a < 1) << a;

  // Memory: tracked parameter, gradient and optimizer bytes equal the analytic counts.
  const auto n = static_cast<double>(gpt::gpt_parameter_count(gpt::gpt_config_by_name("gpt-nano")));
  EXPECT_EQ(io::read_column(out, run + "/memory", "params")[0], 4 * n);
  EXPECT_EQ(io::read_column(out, run + "/memory", "grads")[0], 4 * n);
  EXPECT_EQ(io::read_column(out, run + "/memory", "optimizer")[0], 8 * n);
  EXPECT_GT(io::read_column(out, run + "/memory", "activations")[0], 0);
  EXPECT_GT(io::read_column(out, run + "/memory", "peak_rss")[0], 16 * n);
  EXPECT_GT(io::read_number_attribute(out, run + "/summary", "tokens_per_s"), 0);
  EXPECT_EQ(io::read_number_attribute(out, run + "/summary", "weight_bytes"), 4 * n);
  EXPECT_EQ(io::read_number_attribute(out, run + "/context", "threads"), 2);

  // The cost model's prediction on this machine's profile, made before the run, and its errors
  // after it: signed percentages against the summary's median step and the tracked memory.
  const std::string prediction = run + "/prediction";
  const auto attr = [&](const std::string& group, const std::string& name) {
    return io::read_number_attribute(out, group, name);
  };
  EXPECT_EQ(io::read_string_attribute(out, prediction, "site"), "this-machine");
  EXPECT_EQ(attr(prediction, "feasible"), 1);
  const double predicted_step = attr(prediction, "step_time_s");
  const double measured_step = attr(run + "/summary", "step_time_median_s");
  EXPECT_GT(predicted_step, 0);
  EXPECT_NEAR(attr(prediction, "error_step_time_pct"), 100 * (predicted_step - measured_step) / measured_step, 1e-9);
  double worst = 0;
  for (const std::string category : {"params", "grads", "optimizer", "activations"}) {
    const double predicted = attr(prediction, "memory_" + category);
    const double measured = io::read_column(out, run + "/memory", category)[0];
    const double error = attr(prediction, "error_" + category + "_pct");
    EXPECT_NEAR(error, 100 * (predicted - measured) / measured, 1e-9) << category;
    if (std::fabs(error) > std::fabs(worst)) worst = error;
  }
  EXPECT_EQ(attr(prediction, "error_memory_pct"), worst);
  // one rank's model state is the parameter count times 4 (weights), 4 (gradients), 8 (AdamW)
  EXPECT_EQ(attr(prediction, "memory_params"), 4 * n);
  EXPECT_EQ(attr(prediction, "memory_optimizer"), 8 * n);
  // MFU against this machine's fp32 peak per core (jobs/sites/this-machine.yaml, which follows
  // the machine the sessions get), on the 2 cores of the run's 2 threads
  const costmodel::SiteProfile site =
      costmodel::load_site_profile(costmodel::site_profile_path("this-machine", "site"));
  EXPECT_EQ(attr(prediction, "devices_per_rank"), 2);
  EXPECT_NEAR(attr(run + "/summary", "mfu"),
              attr(run + "/summary", "flops_per_step") / measured_step / (2 * site.peak("fp32")), 1e-12);

  const auto inspect = scratch.run("inspect " + out.string());
  EXPECT_EQ(inspect.exit_code, 0) << inspect.stderr_text;
}

TEST(RunCommand, SuiteCasesAreGatheredIntoOneFile) {
  Scratch scratch;
  const auto suite = scratch.write("mini.yaml",
                                   "suite: mini\nbase: {model: gpt-nano, data: sotu, steps: 3, eval_batches: 1,"
                                   " batch: 4, threads: 1}\nmatrix: {seed: [1, 2]}\n");
  const auto r = scratch.run("run " + suite.string() + " --out " + scratch.path("res").string());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text << r.stdout_text;
  const auto file = scratch.path("res") / "mini.h5";
  const auto runs = io::list_runs(file);
  ASSERT_EQ(runs, (std::vector<std::string>{"seed=1", "seed=2"}));
  for (const auto& id : runs) {
    EXPECT_EQ(io::read_string_attribute(file, "/runs/" + id, "status"), "ok");
    EXPECT_EQ(io::count_rows(file, "/runs/" + id + "/steps"), 3);
  }
  // Different seeds sample different windows, so the first losses differ.
  EXPECT_NE(io::read_column(file, "/runs/seed=1/steps", "loss")[0], io::read_column(file, "/runs/seed=2/steps", "loss")[0]);
}

}  // namespace
}  // namespace sb::testing
