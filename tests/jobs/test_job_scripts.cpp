// Job scripts for one suite on Slurm, PBS, LSF and Flux against checked-in golden files, and
// the shape of a job from its world size. Regenerate the golden files after an intended change
// with SB_UPDATE_GOLDEN=1 ./test_jobs --gtest_filter='JobScripts.*' and review the diff.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "core/check.hpp"
#include "costmodel/site_profile.hpp"
#include "jobs/job_script.hpp"
#include "jobs/process.hpp"
#include "plan/suite.hpp"

namespace sb::jobs {
namespace {

namespace fs = std::filesystem;
const fs::path kHere = fs::path(SB_SOURCE_DIR) / "tests" / "jobs";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The scripts as if `submit --out /scratch/sb` ran /opt/scalebench/bin/scalebench.
std::vector<std::pair<std::string, std::string>> scripts_for(Scheduler scheduler) {
  const plan::Suite suite = plan::load_suite(kHere / "golden_suite.yaml", {});
  const costmodel::SiteProfile site = costmodel::load_site_profile(kHere / "golden_site.yaml");
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : suite.cases) {
    const std::string id = file_id(c.id);
    const JobPaths paths{"/scratch/sb/jobs/" + id + ".yaml", "/scratch/sb/runs/" + id + ".h5"};
    out.emplace_back(id, write_job_script(scheduler, make_job_spec(suite.name, c, site, "/opt/scalebench/bin/scalebench", paths)));
  }
  return out;
}

TEST(JobScripts, MatchGoldenFilesOnEveryScheduler) {
  const bool update = std::getenv("SB_UPDATE_GOLDEN") != nullptr;
  for (const Scheduler scheduler : {Scheduler::slurm, Scheduler::pbs, Scheduler::lsf, Scheduler::flux}) {
    for (const auto& [id, script] : scripts_for(scheduler)) {
      const fs::path golden = kHere / "golden" / scheduler_name(scheduler) / (id + ".sh");
      if (update) {
        fs::create_directories(golden.parent_path());
        std::ofstream(golden, std::ios::binary) << script;
      }
      ASSERT_TRUE(fs::exists(golden)) << golden;
      EXPECT_EQ(script, read_text(golden)) << golden;
    }
  }
}

TEST(JobScripts, ShapeFollowsWorldSizeAndDevicesPerNode) {
  const auto slurm = scripts_for(Scheduler::slurm);
  ASSERT_EQ(slurm.size(), 3u);
  EXPECT_NE(slurm[0].second.find("--nodes=1\n#SBATCH --ntasks=1\n#SBATCH --ntasks-per-node=1\n"), std::string::npos);
  EXPECT_NE(slurm[1].second.find("--nodes=1\n#SBATCH --ntasks=2\n#SBATCH --ntasks-per-node=2\n"), std::string::npos);
  EXPECT_NE(slurm[2].second.find("--nodes=2\n#SBATCH --ntasks=16\n#SBATCH --ntasks-per-node=8\n"), std::string::npos);
  for (const auto& [id, script] : slurm) {
    EXPECT_NE(script.find("#SBATCH --signal=USR1@120\n"), std::string::npos) << id;
    EXPECT_NE(script.find("#SBATCH --gpus-per-task=1\n#SBATCH --gpu-bind=closest\n"), std::string::npos) << id;
    EXPECT_NE(script.find("#SBATCH --account=proj-123\n#SBATCH --partition=gpu\n#SBATCH --qos=normal\n"),
              std::string::npos) << id;
  }
  const auto pbs = scripts_for(Scheduler::pbs);
  EXPECT_NE(pbs[2].second.find("#PBS -l select=2:ncpus=64:mpiprocs=8:ompthreads=8:ngpus=8\n"), std::string::npos);
  const auto lsf = scripts_for(Scheduler::lsf);
  EXPECT_NE(lsf[2].second.find("#BSUB -n 16\n#BSUB -R \"span[ptile=8]\"\n"), std::string::npos);
  const auto flux = scripts_for(Scheduler::flux);
  EXPECT_NE(flux[2].second.find("#flux: -N 2\n#flux: -n 16\n"), std::string::npos);
}

TEST(JobScripts, LauncherPlaceholdersAreFilledIn) {
  JobSpec spec;
  spec.world_size = 16;
  spec.nodes = 2;
  spec.tasks_per_node = 8;
  spec.launcher = {"mpirun", "-np", "{ranks}", "--map-by", "ppr:{ranks_per_node}:node", "--nodes={nodes}"};
  EXPECT_EQ(launcher_words(spec, {"srun"}),
            (std::vector<std::string>{"mpirun", "-np", "16", "--map-by", "ppr:8:node", "--nodes=2"}));
  spec.launcher.clear();
  EXPECT_EQ(launcher_words(spec, {"srun"}), std::vector<std::string>{"srun"});
}

}  // namespace
}  // namespace sb::jobs

namespace sb::jobs {
namespace {

// A Slurm array over two one-rank cases: golden file, the case chosen by the array index,
// and cases of different shapes refused.
TEST(JobScripts, SlurmArrayRunsTheCaseOfItsIndex) {
  const plan::Suite suite = plan::load_suite(kHere / "golden_suite.yaml", {});
  costmodel::SiteProfile site = costmodel::load_site_profile(kHere / "golden_site.yaml");
  std::vector<JobSpec> specs;
  for (const std::string id : {"first", "second"}) {
    plan::SuiteCase c = suite.cases[0];
    c.id = id;
    specs.push_back(make_job_spec(suite.name, c, site, "/opt/scalebench/bin/scalebench",
                                  {"/scratch/sb/jobs/" + id + ".yaml", "/scratch/sb/runs/" + id + ".h5"}));
  }
  const std::string script = write_slurm_array_script(specs, "golden", "golden_suite.yaml");
  const fs::path golden = kHere / "golden" / "slurm" / "array.sh";
  if (std::getenv("SB_UPDATE_GOLDEN")) std::ofstream(golden, std::ios::binary) << script;
  EXPECT_EQ(script, read_text(golden));

  for (auto& spec : specs) spec.launcher = {"echo"};
  const fs::path file = fs::temp_directory_path() / fmt::format("sb-array-{}.sh", ::getpid());
  std::ofstream(file) << write_slurm_array_script(specs, "golden", "golden_suite.yaml");
  EXPECT_EQ(run_process({"bash", "-n", file.string()}).exit_code, 0);
  ::setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  const ProcessResult second = run_process({"bash", file.string()});
  ::setenv("SLURM_ARRAY_TASK_ID", "7", 1);
  const ProcessResult none = run_process({"bash", file.string()});
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  fs::remove(file);
  EXPECT_EQ(second.out,
            "/opt/scalebench/bin/scalebench train --config /scratch/sb/jobs/second.yaml --out "
            "/scratch/sb/runs/second.h5 --run-id second\n");
  EXPECT_EQ(none.exit_code, 2);

  std::vector<JobSpec> mixed;
  for (const auto& c : suite.cases) mixed.push_back(make_job_spec(suite.name, c, site, "scalebench", {"c", "r"}));
  EXPECT_THROW(write_slurm_array_script(mixed, "golden", "golden_suite.yaml"), UserError);
}

// Every case of the default suite asks Slurm for as many CPUs per rank as it runs threads, and
// tells OpenMP so: the case's `threads`, else the site's cpus_per_task, which the trainer then
// reads back from SLURM_CPUS_PER_TASK / OMP_NUM_THREADS.
TEST(JobScripts, QuickstartCasesAskForTheirThreads) {
  const plan::Suite suite = plan::load_suite(fs::path(SB_SOURCE_DIR) / "suites" / "quickstart.yaml", {});
  const costmodel::SiteProfile site = costmodel::load_site_profile(costmodel::site_profile_path("this-machine"));
  ASSERT_FALSE(suite.cases.empty());
  for (const auto& c : suite.cases) {
    const JobPaths paths{"/scratch/sb/jobs/x.yaml", "/scratch/sb/runs/x.h5"};
    const std::string script = write_slurm_script(make_job_spec(suite.name, c, site, "scalebench", paths));
    const int threads = c.config["threads"] ? c.config["threads"].as<int>() : site.scheduler.cpus_per_task;
    ASSERT_GT(threads, 0) << c.id;
    EXPECT_NE(script.find(fmt::format("#SBATCH --cpus-per-task={}\n", threads)), std::string::npos) << c.id << script;
    EXPECT_NE(script.find(fmt::format("'srun' '--cpus-per-task={}'", threads)), std::string::npos) << c.id << script;
    EXPECT_NE(script.find(fmt::format("export OMP_NUM_THREADS={} OMP_PROC_BIND=spread OMP_PLACES=threads\n", threads)),
              std::string::npos) << c.id << script;
  }
}

// A case's `threads` wins over the site's cpus_per_task (the case was written for that shape).
TEST(JobScripts, CaseThreadsWinOverTheSitesCpusPerTask) {
  plan::Suite suite = plan::load_suite(kHere / "golden_suite.yaml", {"threads=3"});
  const costmodel::SiteProfile site = costmodel::load_site_profile(kHere / "golden_site.yaml");
  const JobPaths paths{"/scratch/sb/jobs/x.yaml", "/scratch/sb/runs/x.h5"};
  const JobSpec spec = make_job_spec(suite.name, suite.cases.at(1), site, "scalebench", paths);
  EXPECT_EQ(spec.cpus_per_task, 3);
  EXPECT_NE(write_pbs_script(spec).find("export OMP_NUM_THREADS=3 OMP_PROC_BIND=false\nunset OMP_PLACES\n"),
            std::string::npos) << "mpiexec leaves two ranks of a node on one mask";
}

}  // namespace
}  // namespace sb::jobs
