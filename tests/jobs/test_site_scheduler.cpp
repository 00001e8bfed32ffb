// The optional `scheduler:` keys of a site profile: defaults, values, and one clear sentence
// for each mistake (unknown key, unknown scheduler, a name that could break a directive).
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

}  // namespace
}  // namespace sb::costmodel
