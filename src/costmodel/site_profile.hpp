// SPDX-License-Identifier: Apache-2.0
// A site profile (jobs/sites/*.yaml): one node's devices, their dense peaks per precision,
// memory, the links inside and between nodes, price and power, and the efficiencies that
// `calibrate` fits, and the optional scheduler settings that job scripts use (account,
// partition, QOS, time limit, GPU binding, launcher). Loading checks every key. Leaves out how
// the figures are used (step_prediction) and how scripts are written (src/jobs).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "costmodel/gemm_model.hpp"
#include "costmodel/kernel_profile.hpp"
#include "costmodel/nccl_collectives.hpp"

namespace sb::costmodel {

struct SiteLink {
  double bandwidth = 0;  // bytes/s per device and direction
  double latency = 0;    // seconds per message step
  double reduction = 0;  // calibrated `gamma`: seconds per byte a rank reduces (link_fit.hpp)
  // `nccl:` the achieved bus bandwidth and latency of each NCCL algorithm on this level
  // (nccl_collectives.hpp). When both levels carry one (and neither is calibrated), collectives
  // are timed by algorithm; otherwise by the ring formula over bandwidth and latency above.
  std::optional<NcclLevel> nccl;
};

// `scheduler:` in a site profile; every key optional.
struct SiteScheduler {
  std::string type = "slurm";           // slurm | pbs | lsf | flux: the default of `submit --scheduler`
  std::string account, partition, qos;  // empty: not asked for (partition is the queue on PBS/LSF/Flux)
  int time_limit_minutes = 60;
  int cpus_per_task = 0;                // 0: not asked for
  int gpus_per_task = 0;                // default 1 when the device is a GPU (NVIDIA, AMD Instinct)
  std::string gpu_bind = "closest";     // Slurm --gpu-bind
  std::vector<std::string> launcher;    // empty: the scheduler's own (srun, mpiexec, mpirun, flux run)
  // Site adaptation, one line per item, none holding a newline or NUL:
  // shell lines run as written before the module loads and the launch (trusted site text: not
  // quoted, unlike every value from a case or a path),
  std::vector<std::string> setup;
  // module names, each run as `module load '<name>'` (quoted) after the setup lines,
  std::vector<std::string> modules;
  // and extra directive lines per scheduler ("slurm", "pbs", "lsf", "flux"), each an option of
  // its submit command written after the generated directives, in the order given.
  std::map<std::string, std::vector<std::string>> directives;
};

struct SiteProfile {
  std::string source;  // the file, for messages
  std::string name;
  std::string device;  // "NVIDIA A100-SXM4-80GB"
  int devices_per_node = 0;
  // `nodes`: how many nodes the site has; 0 when the profile does not say (no limit checked).
  int nodes = 0;
  // A device is one CPU core (a CPU site): a rank of `threads` threads uses that many devices.
  bool device_is_cpu_core = false;
  // Dense peak FLOP/s per precision: fp32, bf16 and fp16 always; tf32 where the device has it.
  std::map<std::string, double> peak_flops;
  // `peak_flops_source`: where the dense peaks come from (a datasheet, a whitepaper, a derivation),
  // written beside every MFU; empty when the profile gives none (shipped GPU profiles must).
  std::string peak_flops_source;
  double memory_bytes = 0;      // per device
  double memory_bandwidth = 0;  // bytes/s per device
  SiteLink intra_node, inter_node;
  std::optional<double> price_per_device_hour;  // in `currency`; absent: no cost predicted
  std::string currency = "USD";                 // ISO 4217 code of the price (key `currency`)
  double power_watts = 0;                       // per device
  // calibrated: (absent = the datasheet figure is taken as reached, efficiency 1)
  std::map<std::string, double> gemm_efficiency;  // per precision, (0, 1]
  std::optional<double> memory_efficiency;
  // seconds to give 4096 bytes of memory back to the system and fault them in on the next write
  // (a CPU site, calibrated): what ZeRO-2 and 3 pay per gradient page every micro-batch; absent: 0
  std::optional<double> page_refault_s;
  // `gemm:` the shape-aware GEMM time (gemm_model.hpp) of a GPU: SMs, tile, fitted e_max. When
  // present it replaces the flat peak × efficiency of the GEMMs (calibrated.gemm_efficiency,
  // which a profile with `gemm:` may not carry).
  std::optional<GemmModel> gemm;
  std::optional<SiteLink> calibrated_intra_node, calibrated_inter_node;  // α/β fitted
  // The trainer's kernels timed on this site (calibrated.kernel_times, a CSV path relative to
  // the profile): a prediction of a model the trainer runs sums its kernel calls' times.
  std::shared_ptr<const KernelProfile> kernel_times;
  std::string kernel_times_file;  // as written in the profile
  // The CPU calibrate ran on (calibrated.cpu, core/cpu_identity.hpp): whose kernel times these
  // are; empty where the profile does not say.
  std::string calibrated_cpu;
  SiteScheduler scheduler;

  // Dense peak of a precision ("fp32", "bf16", ...); UserError naming the file when absent.
  double peak(const std::string& precision) const;
  // The calibrated GEMM efficiency of a precision, 1 when not calibrated.
  double efficiency(const std::string& precision) const;
  // The link of a level with its calibrated α/β when present.
  SiteLink link(bool inter) const;
  // Whether collectives are timed per NCCL algorithm: both levels carry `nccl:` and neither has
  // a calibrated α/β (a fit on this site's own measurements wins over published figures).
  bool nccl_collectives() const {
    return intra_node.nccl && inter_node.nccl && !calibrated_intra_node && !calibrated_inter_node;
  }
  bool calibrated() const { return !gemm_efficiency.empty() || gemm.has_value() || kernel_times != nullptr; }
};

// Bounds of a profile's sizes: beyond any machine built.
inline constexpr int kMostDevicesPerNode = 1 << 12;
inline constexpr int kMostNodes = 1 << 20;

// UserError when the site declares its node count and `devices` exceeds nodes × devices per
// node; `request` names what asked ("--devices", "dp × tp × pp").
void require_devices_within_site(const SiteProfile& site, std::int64_t devices, const std::string& request);

SiteProfile parse_site_profile(const YAML::Node& root, const std::string& source);
SiteProfile load_site_profile(const std::filesystem::path& path);

// Where a site named on the command line or in a config lives: an existing file or anything
// with a '/' is a path as given; a bare name is NAME.yaml in the first of site_profile_dirs()
// (core/install_paths.hpp: $SB_SITES_DIR alone when set, else the user's
// ~/.config/scalebench/sites, then the shipped jobs/sites). UserError, naming `what` (e.g.
// "--site") and the folders searched, when a name has no profile.
std::filesystem::path site_profile_path(const std::string& site, const std::string& what = "site");

}  // namespace sb::costmodel
