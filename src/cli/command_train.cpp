// `scalebench train --config F [--set k=v]... --out F.h5 [--run-id ID]`: one case inside the
// current MPI world (what `run` and job scripts launch through mpirun/srun).
#include <mpi.h>

#include <filesystem>

#include "cli/commands.hpp"
#include "core/check.hpp"
#include "train/config.hpp"
#include "train/trainer.hpp"

namespace sb::cli {

namespace {

// MPI for the lifetime of a command; finalised on every path out.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  }
  ~MpiSession() { MPI_Finalize(); }
  int world_size() const {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
  }
};

struct TrainOptions {
  std::string config, out, run_id;
  std::vector<std::string> overrides;
  bool append = false;
};

}  // namespace

std::function<int()> add_train_command(CLI::App& app, int& argc, char**& argv) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "train one case in the current MPI world and write its results");
  cmd->add_option("--config", options->config, "case config (YAML)")->required();
  cmd->add_option("--set", options->overrides, "override a config key: key=value (repeatable)");
  cmd->add_option("--out", options->out, "result file (HDF5)")->required();
  cmd->add_option("--run-id", options->run_id, "run id inside the file (default: config name or model)");
  cmd->add_flag("--append", options->append, "add the run to an existing scalebench result file");
  return [options, &argc, &argv]() {
    // Validate the config and the output location before MPI or any data is touched.
    const train::TrainConfig config = train::load_train_config(options->config, options->overrides);
    const std::filesystem::path out(options->out);
    const auto parent = out.parent_path();
    SB_USER_CHECK(parent.empty() || std::filesystem::is_directory(parent),
                  "the folder of --out '{}' does not exist", options->out);
    MpiSession mpi(argc, argv);
    SB_USER_CHECK(mpi.world_size() == config.strategy.world_size(),
                  "{}: the strategy needs {} ranks (dp×tp×pp) but the MPI world has {}; launch with "
                  "mpirun -np {}",
                  config.source, config.strategy.world_size(), mpi.world_size(), config.strategy.world_size());
    const std::string run_id = !options->run_id.empty() ? options->run_id
                               : !config.name.empty()   ? config.name
                                                        : config.model.name;
    train::run_training(config, out, run_id, options->append);
    return 0;
  };
}

}  // namespace sb::cli
