// SPDX-License-Identifier: Apache-2.0
// `scalebench train --config F [--set k=v]... --out F.h5 [--run-id ID] [--append|--force] [--checkpoint F]
// [--resume F] [--progress plain|tty|off]`:
// one case inside the
// current MPI world (what `run` and job scripts launch through mpirun/srun), stored with the cost
// model's prediction of it on the case's site.
#include <mpi.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/mpi_session.hpp"
#include "cli/progress_option.hpp"
#include "core/check.hpp"
#include "costmodel/run_prediction.hpp"
#include "parallel/fault.hpp"
#include "core/output_path.hpp"
#include "parallel/node_placement.hpp"
#include "train/checkpoint.hpp"
#include "plan/config.hpp"
#include "train/trainer.hpp"

namespace sb::cli {

namespace {

struct TrainOptions {
  std::string config, out, run_id, trace, checkpoint, resume, progress;
  std::vector<std::string> overrides;
  bool append = false, force = false;
};

// An existing --out is kept unless the user says what to do with it: --append adds the run,
// --force replaces the file. A run resuming from its checkpoint (a requeued job reruns its
// command) rewrites its own file from the checkpoint's steps on, as it always has.
void check_out_is_new(const TrainOptions& o, const plan::TrainConfig& config, const std::string& run_id) {
  const std::filesystem::path out(o.out);
  if (o.append || o.force || !std::filesystem::exists(out)) return;
  const bool resumes = !config.checkpoint.resume_from.empty() ||
                       std::filesystem::exists(train::checkpoint_path_of(config, out, run_id));
  SB_USER_CHECK(resumes, "--out '{}' exists: train never replaces a result file; add --force to replace it or "
                "--append to add this run to it", o.out);
}

// Neither the result file, the checkpoint nor the trace may be a file this run reads; the
// checkpoint is read back when it exists (a resume), so it is no input of --out only.
void check_outputs_are_not_inputs(const TrainOptions& o, const plan::TrainConfig& config,
                                  const std::filesystem::path& checkpoint) {
  const auto file = [](const std::string& what, const std::string& name) {
    return NamedInput{what, name.rfind("run:", 0) == 0 ? std::string() : name};  // run:<id> names no file
  };
  const NamedInput config_file = file("--config", o.config), resume = file("--resume", o.resume),
                   finetune = file("finetune.from", config.finetune.from),
                   teacher = file("distill.teacher", config.distill.teacher), out = file("--out", o.out);
  require_not_an_input(o.out, "--out", {config_file, resume, finetune, teacher});
  require_not_an_input(checkpoint, "the checkpoint", {config_file, finetune, teacher, out});
  if (!o.trace.empty())
    require_not_an_input(o.trace, "--trace", {config_file, resume, finetune, teacher, out, {"the checkpoint", checkpoint}});
}

}  // namespace

std::function<int()> add_train_command(CLI::App& app, int& argc, char**& argv) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "train one case in the current MPI world and write its results");
  cmd->add_option("--config", options->config, "case config (YAML)")->required();
  cmd->add_option("--set", options->overrides, "override a config key: key=value (repeatable)");
  cmd->add_option("--out", options->out, "result file (HDF5)")->required();
  cmd->add_option("--run-id", options->run_id, "run id inside the file (default: config name or model)");
  cmd->add_flag("--append", options->append, "add the run to an existing scalebench result file");
  cmd->add_flag("--force", options->force, "replace --out when it exists (default: refuse)");
  cmd->add_option("--trace", options->trace,
                  "write every rank's timeline as a Chrome trace (JSON; open in ui.perfetto.dev)");
  cmd->add_option("--checkpoint", options->checkpoint,
                  "checkpoint file (default checkpoint.path, or <out>.<run id>.ckpt.h5); resumed from when it exists");
  cmd->add_option("--resume", options->resume, "resume from this checkpoint file (it must exist)");
  add_progress_option(cmd, options->progress);
  return [options, &argc, &argv]() {
    // Validate the config and the output location before MPI or any data is touched.
    apply_progress_option(options->progress);
    plan::TrainConfig config = plan::load_train_config(options->config, options->overrides);
    if (!options->checkpoint.empty()) config.checkpoint.path = options->checkpoint;
    config.checkpoint.resume_from = options->resume;
    const std::filesystem::path out(options->out);
    const auto parent = out.parent_path();
    SB_USER_CHECK(parent.empty() || std::filesystem::is_directory(parent),
                  "the folder of --out '{}' does not exist", options->out);
    const std::filesystem::path trace(options->trace);
    SB_USER_CHECK(trace.empty() || trace.parent_path().empty() || std::filesystem::is_directory(trace.parent_path()),
                  "the folder of --trace '{}' does not exist", options->trace);
    const std::string run_id = !options->run_id.empty() ? options->run_id
                               : !config.name.empty()   ? config.name
                                                        : config.model.name;
    check_outputs_are_not_inputs(*options, config, train::checkpoint_path_of(config, out, run_id));
    check_out_is_new(*options, config, run_id);
    // What the trainer does not run (fp8, fused attention, Llama blocks, ...) is refused as such,
    // before the prediction, whose site may not model it either.
    if (const std::optional<std::string> refusal = train::trainer_refusal(config)) throw UserError(*refusal);
    // The cost model's prediction of this run, made before it (a wrong site fails here).
    costmodel::predict_run(config);
    MpiSession mpi(argc, argv);
    // ... and again where the ranks turned out to be: groups that span nodes take the site's
    // inter-node link (collective over the world).
    const parallel::NodePlacement nodes = parallel::gather_node_placement(MPI_COMM_WORLD);
    const costmodel::RankPlacement placement{nodes.nodes(), nodes.most_ranks_on_a_node()};
    const plan::RunPrediction prediction = costmodel::predict_run(config, &placement);
    if (!prediction.warning.empty()) {
      int world_rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      if (world_rank == 0) std::cerr << "scalebench: warning: " << prediction.warning << "\n";
    }
    parallel::install_termination_handler();
    parallel::defer_termination_signal(SIGUSR1);  // the trainer checkpoints at its next step boundary
    try {
      train::run_training(config, out, run_id, options->append, trace, &prediction, !options->run_id.empty());
    } catch (const train::TrainingInterrupted& e) {
      // every rank stopped at the same step with the checkpoint on disk: a clean exit that asks
      // the job script to requeue
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) std::cerr << "scalebench: " << e.what() << "\n";
      return train::kRequeueExitStatus;
    } catch (const std::exception& e) {
      // Alone, the error travels up to main. With other ranks, they may be waiting in a
      // collective for this one: rank 0 has recorded the failure; end the job, never hang it.
      if (mpi.world_size() > 1)
        parallel::report_failure_and_abort(e.what(), dynamic_cast<const UserError*>(&e) ? 2 : 1);
      throw;
    }
    return 0;
  };
}

}  // namespace sb::cli
