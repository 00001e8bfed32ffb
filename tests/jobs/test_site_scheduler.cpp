// SPDX-License-Identifier: Apache-2.0
// The optional `scheduler:` keys of a site profile: defaults, values, and one clear sentence
// for each mistake (unknown key, unknown scheduler, a name that could break a directive, a
// setup line, module or directive that is not one line).
#include <gtest/gtest.h>

#include "core/check.hpp"
#include "costmodel/site_profile.hpp"
#include "plan/config.hpp"

namespace sb::costmodel {
namespace {

const std::string kProfile = R"(name: s
device: DEVICE
devices_per_node: 4
peak_flops: {fp32: 1.0e12, bf16: 2.0e12, fp16: 2.0e12}
memory_bytes: 1.0e9
memory_bandwidth: 1.0e9
links:
  intra_node: {bandwidth: 1.0e9, latency: 1.0e-6}
  inter_node: {bandwidth: 1.0e9, latency: 1.0e-6}
power_watts: 100
)";

SiteProfile parse(const std::string& device, const std::string& scheduler) {
  std::string text = kProfile;
  text.replace(text.find("DEVICE"), 6, device);
  return parse_site_profile(plan::parse_yaml_text(text + scheduler, "site.yaml"), "site.yaml");
}

std::string error_of(const std::string& scheduler) {
  try {
    parse("AMD EPYC core", scheduler);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(SiteScheduler, DefaultsWithoutTheSection) {
  const SiteProfile cpu = parse("AMD EPYC core", "");
  EXPECT_EQ(cpu.scheduler.type, "slurm");
  EXPECT_EQ(cpu.scheduler.time_limit_minutes, 60);
  EXPECT_EQ(cpu.scheduler.gpus_per_task, 0);
  EXPECT_TRUE(cpu.scheduler.account.empty());
  EXPECT_EQ(parse("NVIDIA H100-SXM5-80GB", "").scheduler.gpus_per_task, 1);
  EXPECT_EQ(parse("AMD Instinct MI250X (one GCD)", "").scheduler.gpus_per_task, 1);
}

TEST(SiteScheduler, EveryKeyIsRead) {
  const SiteProfile p = parse("NVIDIA H100", R"(scheduler:
  type: pbs
  account: a-1
  partition: gpu
  qos: high
  time_limit_minutes: 15
  cpus_per_task: 4
  gpus_per_task: 2
  gpu_bind: none
  launcher: [mpirun, -np, "{ranks}"]
)");
  EXPECT_EQ(p.scheduler.type, "pbs");
  EXPECT_EQ(p.scheduler.account, "a-1");
  EXPECT_EQ(p.scheduler.partition, "gpu");
  EXPECT_EQ(p.scheduler.qos, "high");
  EXPECT_EQ(p.scheduler.time_limit_minutes, 15);
  EXPECT_EQ(p.scheduler.cpus_per_task, 4);
  EXPECT_EQ(p.scheduler.gpus_per_task, 2);
  EXPECT_EQ(p.scheduler.gpu_bind, "none");
  EXPECT_EQ(p.scheduler.launcher, (std::vector<std::string>{"mpirun", "-np", "{ranks}"}));
}

TEST(SiteScheduler, MistakesAreOneSentenceNamingTheKey) {
  EXPECT_NE(error_of("scheduler: {acount: x}\n").find("unknown key 'scheduler.acount'"), std::string::npos);
  EXPECT_NE(error_of("scheduler: {type: sge}\n").find("'scheduler.type' must be slurm, pbs, lsf or flux"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {account: \"a b\"}\n").find("'scheduler.account' must be a name"), std::string::npos);
  EXPECT_NE(error_of("scheduler: {partition: \"p\\nq\"}\n").find("'scheduler.partition' must be a name"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {time_limit_minutes: 0}\n").find("'scheduler.time_limit_minutes' must be at least 1"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {launcher: []}\n").find("'scheduler.launcher' must be a list"), std::string::npos);
}

TEST(SiteScheduler, SetupModulesAndDirectivesAreReadInOrder) {
  const SiteProfile p = parse("NVIDIA H100", R"(scheduler:
  partition: gpu
  setup: ["source /etc/profile.d/lmod.sh", 'export FI_PROVIDER="cxi"']
  modules: [PrgEnv-gnu, "cray-mpich/8.1.28", 12]
  directives:
    slurm: [--exclusive, --constraint=gpu, --reservation=acc]
    pbs: [-l place=excl]
    lsf: [-x]
    flux: [--exclusive]
)");
  EXPECT_EQ(p.scheduler.partition, "gpu");
  EXPECT_EQ(p.scheduler.setup, (std::vector<std::string>{"source /etc/profile.d/lmod.sh", "export FI_PROVIDER=\"cxi\""}));
  EXPECT_EQ(p.scheduler.modules, (std::vector<std::string>{"PrgEnv-gnu", "cray-mpich/8.1.28", "12"}));
  EXPECT_EQ(p.scheduler.directives.at("slurm"),
            (std::vector<std::string>{"--exclusive", "--constraint=gpu", "--reservation=acc"}));
  EXPECT_EQ(p.scheduler.directives.at("pbs"), std::vector<std::string>{"-l place=excl"});
  EXPECT_EQ(p.scheduler.directives.at("lsf"), std::vector<std::string>{"-x"});
  EXPECT_EQ(p.scheduler.directives.at("flux"), std::vector<std::string>{"--exclusive"});
  // Each is optional: a profile without them has none.
  const SiteProfile plain = parse("NVIDIA H100", "scheduler: {partition: gpu}\n");
  EXPECT_TRUE(plain.scheduler.setup.empty());
  EXPECT_TRUE(plain.scheduler.modules.empty());
  EXPECT_TRUE(plain.scheduler.directives.empty());
  EXPECT_EQ(parse("NVIDIA H100", "scheduler: {directives: {pbs: [-l place=excl]}}\n").scheduler.directives.count("slurm"),
            0u);
}

// A directive is one line read by the scheduler: a newline or NUL would end it and start a line
// the shell runs, so either is refused with the key, the item and the file.
TEST(SiteScheduler, ADirectiveThatIsNotOneLineIsRefused) {
  const std::string newline = error_of("scheduler: {directives: {slurm: [--exclusive, \"--comment=x\\ntouch /tmp/y\"]}}\n");
  EXPECT_NE(newline.find("site.yaml: 'scheduler.directives.slurm' item 2 holds a newline, carriage return or NUL"),
            std::string::npos) << newline;
  const std::string nul = error_of("scheduler: {directives: {pbs: [\"-l place=excl\\0\"]}}\n");
  EXPECT_NE(nul.find("site.yaml: 'scheduler.directives.pbs' item 1 holds a newline, carriage return or NUL"),
            std::string::npos) << nul;
  EXPECT_NE(error_of("scheduler: {directives: {lsf: [\"-x\\r\"]}}\n").find("'scheduler.directives.lsf' item 1 holds a newline"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {directives: {flux: [\"\"]}}\n").find("'scheduler.directives.flux' item 1 is empty"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {directives: {slurm: [constraint=gpu]}}\n")
                .find("'scheduler.directives.slurm' item 1 ('constraint=gpu') must be an option of the scheduler's submit command"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {directives: {flux: ['--setattr=x=\"\"\"']}}\n").find("triple quote"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {directives: {sge: [-l h_rt=1:00:00]}}\n")
                .find("unknown key 'scheduler.directives.sge' (allowed: slurm, pbs, lsf, flux)"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {directives: [--exclusive]}\n").find("'scheduler.directives' must be a mapping"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {directives: {slurm: --exclusive}}\n").find("'scheduler.directives.slurm' must be a list"),
            std::string::npos);
}

TEST(SiteScheduler, SetupLinesAndModulesMustBeOneLineEach) {
  EXPECT_NE(error_of("scheduler: {setup: [\"a\\nb\"]}\n").find("site.yaml: 'scheduler.setup' item 1 holds a newline"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {modules: [gcc, \"x\\0y\"]}\n").find("site.yaml: 'scheduler.modules' item 2 holds a newline"),
            std::string::npos);
  EXPECT_NE(error_of("scheduler: {modules: gcc}\n").find("'scheduler.modules' must be a list of strings"), std::string::npos);
  EXPECT_NE(error_of("scheduler: {setup: [{a: b}]}\n").find("'scheduler.setup' item 1 must be a string"), std::string::npos);
}

// Keys a site file may not have are still refused with today's sentence, listing the new keys.
TEST(SiteScheduler, UnknownKeysAreStillRefused) {
  const std::string e = error_of("scheduler: {constraint: gpu}\n");
  EXPECT_NE(e.find("site.yaml: unknown key 'scheduler.constraint' (allowed: type, account, partition, qos, "
                   "time_limit_minutes, cpus_per_task, gpus_per_task, gpu_bind, launcher, setup, modules, directives)"),
            std::string::npos) << e;
}

}  // namespace
}  // namespace sb::costmodel
