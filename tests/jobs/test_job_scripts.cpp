// SPDX-License-Identifier: Apache-2.0
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

constexpr Scheduler kSchedulers[] = {Scheduler::slurm, Scheduler::pbs, Scheduler::lsf, Scheduler::flux};

// The paths of a case as if `submit --out /scratch/sb` wrote it.
JobPaths paths_of(const std::string& id) {
  return {"/scratch/sb/jobs/" + id + ".yaml", "/scratch/sb/runs/" + id + ".h5", "/scratch/sb/jobs/" + id + ".sh",
          "/scratch/sb/jobs/" + id + ".out"};
}

// The scripts as if `submit --out /scratch/sb` ran /opt/scalebench/bin/scalebench.
std::vector<std::pair<std::string, std::string>> scripts_for(Scheduler scheduler,
                                                             const std::string& site_file = "golden_site.yaml") {
  const plan::Suite suite = plan::load_suite(kHere / "golden_suite.yaml", {});
  const costmodel::SiteProfile site = costmodel::load_site_profile(kHere / site_file);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : suite.cases) {
    const std::string id = file_id(c.id);
    out.emplace_back(id, write_job_script(scheduler, make_job_spec(suite.name, c, site, "/opt/scalebench/bin/scalebench",
                                                                   paths_of(id))));
  }
  return out;
}

void expect_golden(const fs::path& golden, const std::string& script) {
  if (std::getenv("SB_UPDATE_GOLDEN") != nullptr) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden, std::ios::binary) << script;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden;
  EXPECT_EQ(script, read_text(golden)) << golden;
}

TEST(JobScripts, MatchGoldenFilesOnEveryScheduler) {
  for (const Scheduler scheduler : kSchedulers) {
    for (const auto& [id, script] : scripts_for(scheduler))
      expect_golden(kHere / "golden" / scheduler_name(scheduler) / (id + ".sh"), script);
  }
}

// golden_site_adapted.yaml: the site's setup lines, modules and extra directives, on the
// two-rank case.
TEST(JobScripts, SiteAdaptedScriptsMatchGoldenFilesOnEveryScheduler) {
  for (const Scheduler scheduler : kSchedulers) {
    const auto scripts = scripts_for(scheduler, "golden_site_adapted.yaml");
    ASSERT_EQ(scripts[1].first, "dp2");
    expect_golden(kHere / "golden" / scheduler_name(scheduler) / "site-adapted.sh", scripts[1].second);
  }
}

// The site's directives come after every generated one (a later option wins on sbatch, qsub,
// bsub and flux batch), in the site's order, before the first line the shell runs; nothing
// else is directive-shaped.
TEST(JobScripts, SiteDirectivesFollowTheGeneratedOnesInTheSitesOrder) {
  const std::pair<Scheduler, std::vector<std::string>> expected[] = {
      {Scheduler::slurm, {"#SBATCH --requeue", "#SBATCH --constraint=h200&ib", "#SBATCH --exclusive"}},
      {Scheduler::pbs, {"#PBS -r y", "#PBS -l place=excl"}},
      {Scheduler::lsf, {"#BSUB -Q \"75\"", "#BSUB -x"}},
      {Scheduler::flux, {"#flux: --signal=USR1@2m", "#flux: --exclusive"}}};
  for (const auto& [scheduler, lines] : expected) {
    const std::string script = scripts_for(scheduler, "golden_site_adapted.yaml")[1].second;
    std::string joined;
    for (const auto& line : lines) joined += line + "\n";
    const auto at = script.find(joined);
    ASSERT_NE(at, std::string::npos) << scheduler_name(scheduler) << "\n" << script;
    EXPECT_EQ(script.substr(at + joined.size(), 2), "# ") << "the site's directives are not the last ones:\n" << script;
    EXPECT_LT(at + joined.size(), script.find("\nset -e\n")) << script;
    // The other schedulers' directives are not written.
    for (const char* other : {"-l place=excl\n", " -x\n", "--constraint", "--exclusive\n"}) {
      const auto count = [&](const std::string& text) {
        std::size_t n = 0;
        for (auto p = text.find(other); p != std::string::npos; p = text.find(other, p + 1)) ++n;
        return n;
      };
      EXPECT_EQ(count(script), count(joined)) << scheduler_name(scheduler) << ": " << other;
    }
  }
}

// The setup lines run before the module loads, both before `set -eu` and the launch; each
// module is one quoted word.
TEST(JobScripts, SetupLinesThenQuotedModuleLoadsBeforeTheLaunch) {
  for (const Scheduler scheduler : kSchedulers) {
    const std::string script = scripts_for(scheduler, "golden_site_adapted.yaml")[1].second;
    const auto setup = script.find("\nsource /etc/profile.d/lmod.sh\nexport NCCL_IB_HCA=mlx5 UCX_TLS=rc,sm,self\n");
    const auto modules = script.find(
        "\nmodule load 'gcc/12.3.0'\nmodule load 'openmpi/4.1.6-cuda'\nmodule load 'cuda/12.4 (default)'\n");
    const auto strict = script.find("\nset -eu\n");
    const auto launch = script.find("'/opt/scalebench/bin/scalebench' 'train'");
    ASSERT_NE(setup, std::string::npos) << script;
    ASSERT_NE(modules, std::string::npos) << script;
    EXPECT_LT(script.find("\nset -e\n"), setup) << scheduler_name(scheduler);
    EXPECT_LT(setup, modules) << scheduler_name(scheduler);
    EXPECT_LT(modules, strict) << scheduler_name(scheduler);
    EXPECT_LT(strict, launch) << scheduler_name(scheduler);
  }
  // Without setup or modules the script has no site section.
  EXPECT_EQ(scripts_for(Scheduler::slurm)[1].second.find("module load"), std::string::npos);
  EXPECT_EQ(scripts_for(Scheduler::slurm)[1].second.find("\nset -e\n"), std::string::npos);
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
  expect_golden(kHere / "golden" / "slurm" / "array.sh", write_slurm_array_script(specs, "golden", "golden_suite.yaml"));

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

namespace sb::jobs {
namespace {

// What each script does after the trainer's requeue status (75), run with bash: a launcher
// that exits 75 and fake scheduler clients on PATH that record their arguments. Slurm requeues
// the job, PBS and Flux submit the same script again after this job, LSF leaves it to `-Q`;
// every script exits 75. A launch that ends 0 submits nothing.
class RequeueTail : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("sb-requeue-tail-{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    for (const char* tool : {"scontrol", "qsub", "flux", "bsub"}) {
      std::ofstream(dir_ / "bin" / tool) << "#!/bin/sh\n"
                                         << "if [ \"$1\" = getattr ]; then echo f2Ab9; exit 0; fi\n"
                                         << "printf '%s\\n' \"$0\" \"$@\" >> \"" << (dir_ / "calls").string() << "\"\n";
      fs::permissions(dir_ / "bin" / tool, fs::perms::owner_all);
    }
    path_ = std::getenv("PATH");
    ::setenv("PATH", ((dir_ / "bin").string() + ":" + path_).c_str(), 1);
    ::setenv("SLURM_JOB_ID", "41", 1);
    ::setenv("PBS_JOBID", "42.pbs01", 1);
  }
  void TearDown() override {
    ::setenv("PATH", path_.c_str(), 1);
    ::unsetenv("SLURM_JOB_ID");
    ::unsetenv("PBS_JOBID");
    fs::remove_all(dir_);
  }
  // Runs the script of the two-rank case with `launcher`; the exit status and the calls made.
  std::pair<int, std::string> run(Scheduler scheduler, const std::vector<std::string>& launcher) {
    const plan::Suite suite = plan::load_suite(kHere / "golden_suite.yaml", {});
    const costmodel::SiteProfile site = costmodel::load_site_profile(kHere / "golden_site.yaml");
    JobSpec spec = make_job_spec(suite.name, suite.cases.at(1), site, "scalebench", paths_of("dp2"));
    spec.launcher = launcher;
    const fs::path file = dir_ / "job.sh";
    std::ofstream(file) << write_job_script(scheduler, spec);
    fs::remove(dir_ / "calls");
    const ProcessResult r = run_process({"bash", file.string()});
    return {r.exit_code, fs::exists(dir_ / "calls") ? read_text(dir_ / "calls") : ""};
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(RequeueTail, EachSchedulerRunsTheCaseAgainAfterStatus75) {
  const std::vector<std::string> exits_75 = {"sh", "-c", "exit 75"};
  const std::string bin = (dir_ / "bin").string() + "/";
  EXPECT_EQ(run(Scheduler::slurm, exits_75), std::make_pair(75, bin + "scontrol\nrequeue\n41\n"));
  EXPECT_EQ(run(Scheduler::pbs, exits_75),
            std::make_pair(75, bin + "qsub\n-W\ndepend=afterany:42.pbs01\n-o\n/scratch/sb/jobs/dp2.after-42.pbs01.out\n"
                                     "-j\noe\n/scratch/sb/jobs/dp2.sh\n"));
  EXPECT_EQ(run(Scheduler::flux, exits_75),
            std::make_pair(75, bin + "flux\n--parent\nbatch\n--dependency=afterany:f2Ab9\n"
                                     "--output=/scratch/sb/jobs/dp2.after-f2Ab9.out\n/scratch/sb/jobs/dp2.sh\n"));
  EXPECT_EQ(run(Scheduler::lsf, exits_75), std::make_pair(75, std::string()));
  for (const Scheduler scheduler : kSchedulers) {
    EXPECT_EQ(run(scheduler, {"true"}), std::make_pair(0, std::string())) << scheduler_name(scheduler);
    EXPECT_EQ(run(scheduler, {"false"}), std::make_pair(1, std::string())) << scheduler_name(scheduler);
  }
}

// LSF requeues by itself on the status the trainer gives: -Q names exactly that status, and
// the job is rerunnable; PBS marks the job rerunnable.
TEST(JobScripts, LsfAndPbsAskTheSchedulerToRerun) {
  for (const auto& [id, script] : scripts_for(Scheduler::lsf))
    EXPECT_NE(script.find(fmt::format("#BSUB -r\n#BSUB -Q \"{}\"\n", kRequeueExitStatus)), std::string::npos) << id;
  for (const auto& [id, script] : scripts_for(Scheduler::pbs)) EXPECT_NE(script.find("#PBS -r y\n"), std::string::npos) << id;
}

}  // namespace
}  // namespace sb::jobs
