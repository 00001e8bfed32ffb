// SPDX-License-Identifier: Apache-2.0
// Parsing and checking of site profiles: unknown keys, missing fields and impossible values
// are one sentence naming the file and key. Leaves out where the figures come from (the
// comments of each jobs/sites/*.yaml).
#include "costmodel/site_profile.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <set>
#include <string_view>
#include <vector>

#include "core/check.hpp"
#include "core/install_paths.hpp"
#include "plan/config.hpp"

namespace sb::costmodel {

namespace {

// Checks a mapping's keys against the allowed ones and reads its values with the file and
// dotted key in every message.
class Mapping {
 public:
  Mapping(const YAML::Node& node, std::string prefix, const std::string& source,
          const std::vector<std::string>& allowed)
      : node_(node), prefix_(std::move(prefix)), source_(source) {
    SB_USER_CHECK(node && node.IsMap(), "{}: '{}' must be a mapping", source_, where());
    for (const auto& item : node_) {
      const std::string key = item.first.as<std::string>();
      SB_USER_CHECK(std::find(allowed.begin(), allowed.end(), key) != allowed.end(),
                    "{}: unknown key '{}' (allowed: {})", source_, qualified(key),
                    fmt::join(allowed, ", "));
    }
  }
  bool has(const std::string& key) const { return static_cast<bool>(node_[key]); }
  std::string qualified(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  YAML::Node child(const std::string& key) const {
    SB_USER_CHECK(has(key), "{}: '{}' is missing", source_, qualified(key));
    return node_[key];
  }
  template <class T>
  T required(const std::string& key) const {
    return convert<T>(child(key), key);
  }
  // A positive finite number.
  double positive(const std::string& key) const {
    const double value = required<double>(key);
    SB_USER_CHECK(value > 0, "{}: '{}' must be positive, got {}", source_, qualified(key), value);
    SB_USER_CHECK(std::isfinite(value), "{}: '{}' must be a finite number, got {}", source_, qualified(key), value);
    return value;
  }
  std::optional<double> optional_positive(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return positive(key);
  }
  const YAML::Node& node() const { return node_; }

 private:
  std::string where() const { return prefix_.empty() ? "the profile" : prefix_; }
  template <class T>
  T convert(const YAML::Node& value, const std::string& key) const {
    try {
      return value.as<T>();
    } catch (const YAML::Exception&) {
      throw UserError(fmt::format("{}: '{}' has the wrong type (got '{}')", source_, qualified(key),
                                  value.IsScalar() ? value.Scalar() : std::string("a collection")));
    }
  }
  YAML::Node node_;
  std::string prefix_;
  const std::string& source_;
};

const std::vector<std::string> kPrecisions{"fp32", "tf32", "bf16", "fp16", "fp8"};

std::map<std::string, double> read_per_precision(const Mapping& parent, const std::string& key,
                                                 const std::string& source, bool required_set,
                                                 bool at_most_one) {
  Mapping m(parent.child(key), parent.qualified(key), source, kPrecisions);
  std::map<std::string, double> values;
  for (const auto& precision : kPrecisions) {
    if (m.has(precision)) {
      values[precision] = m.positive(precision);
      SB_USER_CHECK(!at_most_one || values[precision] <= 1.0,
                    "{}: '{}' must lie in (0, 1], got {}", source, m.qualified(precision),
                    values[precision]);
    } else if (required_set && precision != "tf32" && precision != "fp8") {
      throw UserError(fmt::format("{}: '{}' is missing (fp32, bf16 and fp16 are required; tf32 and fp8 "
                                  "where the device has them)", source, m.qualified(precision)));
    }
  }
  return values;
}

double non_negative(const Mapping& m, const std::string& key, const std::string& source) {
  const auto value = m.required<double>(key);
  SB_USER_CHECK(value >= 0, "{}: '{}' must not be negative, got {}", source, m.qualified(key), value);
  return value;
}

// A GEMM model's efficiency: a fraction of a dense peak, in (0, 1].
double peak_fraction(const Mapping& m, const std::string& key, const std::string& source) {
  const double value = m.positive(key);
  SB_USER_CHECK(value <= 1.0, "{}: '{}' must lie in (0, 1], got {}", source, m.qualified(key), value);
  return value;
}

// A GEMM tile's fill and epilogue in steps of its K loop, 0 to 65536.
double k_steps(const Mapping& m, const std::string& key, const std::string& source) {
  const double value = non_negative(m, key, source);
  SB_USER_CHECK(value <= 65536, "{}: '{}' is a tile's fill and epilogue in steps of K, at most 65536, got {}", source,
                m.qualified(key), value);
  return value;
}

// links.<level>.nccl: {ring, tree, nvls}, each {bus_bandwidth, step_latency, base_latency,
// max_bus_bandwidth?}; ring is required, nvls only inside a node.
NcclLevel read_nccl_level(const Mapping& parent, const std::string& source, bool inter) {
  const Mapping m(parent.child("nccl"), parent.qualified("nccl"), source, {"ring", "tree", "nvls"});
  SB_USER_CHECK(m.has("ring"), "{}: '{}' must give the ring algorithm's figures", source, m.qualified("ring"));
  SB_USER_CHECK(!(inter && m.has("nvls")), "{}: '{}': NVLink SHARP runs inside a node only", source,
                m.qualified("nvls"));
  const auto algorithm = [&](const std::string& key) -> std::optional<NcclAlgorithmCost> {
    if (!m.has(key)) return std::nullopt;
    const Mapping a(m.child(key), m.qualified(key), source,
                    {"bus_bandwidth", "step_latency", "base_latency", "max_bus_bandwidth"});
    NcclAlgorithmCost c;
    c.bus_bandwidth = a.positive("bus_bandwidth");
    c.step_latency = non_negative(a, "step_latency", source);
    c.base_latency = non_negative(a, "base_latency", source);
    c.max_bus_bandwidth = a.optional_positive("max_bus_bandwidth");
    return c;
  };
  NcclLevel level;
  level.ring = algorithm("ring");
  level.tree = algorithm("tree");
  level.nvls = algorithm("nvls");
  return level;
}

SiteLink read_link(const Mapping& parent, const std::string& key, const std::string& source,
                   const char* bandwidth_key, const char* latency_key, bool with_nccl = false,
                   const char* reduction_key = nullptr) {
  std::vector<std::string> keys{bandwidth_key, latency_key};
  if (with_nccl) keys.emplace_back("nccl");
  if (reduction_key) keys.emplace_back(reduction_key);
  Mapping m(parent.child(key), parent.qualified(key), source, keys);
  SiteLink link;
  link.bandwidth = m.positive(bandwidth_key);
  link.latency = non_negative(m, latency_key, source);
  if (reduction_key && m.has(reduction_key)) link.reduction = non_negative(m, reduction_key, source);
  if (with_nccl && m.has("nccl")) link.nccl = read_nccl_level(m, source, key == "inter_node");
  return link;
}

// Names that go into scheduler directives unquoted (#SBATCH --account=...): letters, digits,
// '.', '_', '-' and '+' only, so no directive can be broken or extended through them.
std::string directive_name(const Mapping& m, const std::string& key, const std::string& source) {
  if (!m.has(key)) return "";
  const auto value = m.required<std::string>(key);
  const bool ok = !value.empty() && std::all_of(value.begin(), value.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-' || ch == '+';
  });
  SB_USER_CHECK(ok, "{}: '{}' must be a name of letters, digits, '.', '_', '-' or '+', got '{}'", source,
                m.qualified(key), value);
  return value;
}

// A list of one-line texts (scheduler.setup, .modules, .directives.<scheduler>): each item a
// non-empty string without newline, carriage return or NUL, which would end or cut its line.
std::vector<std::string> line_list(const Mapping& m, const std::string& key, const std::string& source) {
  if (!m.has(key)) return {};
  const std::string name = m.qualified(key);
  const YAML::Node node = m.child(key);
  SB_USER_CHECK(node.IsSequence(), "{}: '{}' must be a list of strings, one line each", source, name);
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < node.size(); ++i) {
    SB_USER_CHECK(node[i].IsScalar(), "{}: '{}' item {} must be a string, got a collection", source, name, i + 1);
    const std::string line = node[i].as<std::string>();
    SB_USER_CHECK(!line.empty(), "{}: '{}' item {} is empty", source, name, i + 1);
    SB_USER_CHECK(line.find_first_of(std::string_view("\n\r\0", 3)) == std::string::npos,
                  "{}: '{}' item {} holds a newline, carriage return or NUL; each item is one line of the job "
                  "script (write several items instead)",
                  source, name, i + 1);
    lines.push_back(line);
  }
  return lines;
}

// scheduler.directives: per scheduler, options of its submit command (--constraint=gpu,
// -l place=excl, -x, --exclusive), each written as one directive line.
std::map<std::string, std::vector<std::string>> read_directives(const Mapping& scheduler, const std::string& source) {
  std::map<std::string, std::vector<std::string>> directives;
  if (!scheduler.has("directives")) return directives;
  const Mapping m(scheduler.child("directives"), "scheduler.directives", source, {"slurm", "pbs", "lsf", "flux"});
  for (const char* name : {"slurm", "pbs", "lsf", "flux"}) {
    std::vector<std::string> lines = line_list(m, name, source);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      SB_USER_CHECK(lines[i].front() == '-',
                    "{}: '{}' item {} ('{}') must be an option of the scheduler's submit command, starting "
                    "with '-' (e.g. --constraint=gpu)",
                    source, m.qualified(name), i + 1, lines[i]);
      // flux batch reads """ as the start of a string that runs over the following lines
      SB_USER_CHECK(std::string_view(name) != "flux" || lines[i].find(R"(""")") == std::string::npos,
                    "{}: '{}' item {} holds a triple quote, which would carry the directive over the "
                    "following lines",
                    source, m.qualified(name), i + 1);
    }
    if (!lines.empty()) directives[name] = std::move(lines);
  }
  return directives;
}

SiteScheduler read_scheduler(const Mapping& top, const std::string& device, const std::string& source) {
  SiteScheduler s;
  const bool gpu = device.rfind("NVIDIA", 0) == 0 || device.find("AMD Instinct") != std::string::npos;
  s.gpus_per_task = gpu ? 1 : 0;
  if (!top.has("scheduler")) return s;
  const Mapping m(top.child("scheduler"), "scheduler", source,
                  {"type", "account", "partition", "qos", "time_limit_minutes", "cpus_per_task",
                   "gpus_per_task", "gpu_bind", "launcher", "setup", "modules", "directives"});
  if (m.has("type")) {
    s.type = m.required<std::string>("type");
    SB_USER_CHECK(s.type == "slurm" || s.type == "pbs" || s.type == "lsf" || s.type == "flux",
                  "{}: 'scheduler.type' must be slurm, pbs, lsf or flux, got '{}'", source, s.type);
  }
  s.account = directive_name(m, "account", source);
  s.partition = directive_name(m, "partition", source);
  s.qos = directive_name(m, "qos", source);
  if (m.has("gpu_bind")) s.gpu_bind = directive_name(m, "gpu_bind", source);
  const auto count = [&](const std::string& key, int minimum, int fallback) {
    if (!m.has(key)) return fallback;
    const int value = m.required<int>(key);
    SB_USER_CHECK(value >= minimum, "{}: 'scheduler.{}' must be at least {}, got {}", source, key, minimum,
                  value);
    return value;
  };
  s.time_limit_minutes = count("time_limit_minutes", 1, s.time_limit_minutes);
  s.cpus_per_task = count("cpus_per_task", 1, 0);
  s.gpus_per_task = count("gpus_per_task", 0, s.gpus_per_task);
  if (m.has("launcher")) {
    const YAML::Node launcher = m.child("launcher");
    SB_USER_CHECK(launcher.IsSequence() && launcher.size() > 0,
                  "{}: 'scheduler.launcher' must be a list of words, the command first (e.g. [srun, --mpi=pmix])",
                  source);
    s.launcher = m.required<std::vector<std::string>>("launcher");
  }
  s.setup = line_list(m, "setup", source);
  s.modules = line_list(m, "modules", source);
  s.directives = read_directives(m, source);
  return s;
}

}  // namespace

double SiteProfile::peak(const std::string& precision) const {
  const auto it = peak_flops.find(precision);
  SB_USER_CHECK(it != peak_flops.end(), "{}: 'peak_flops.{}' is not given: this device has no {} peak",
                source, precision, precision);
  return it->second;
}

double SiteProfile::efficiency(const std::string& precision) const {
  const auto it = gemm_efficiency.find(precision);
  return it == gemm_efficiency.end() ? 1.0 : it->second;
}

SiteLink SiteProfile::link(bool inter) const {
  const auto& calibrated = inter ? calibrated_inter_node : calibrated_intra_node;
  if (calibrated) return *calibrated;
  return inter ? inter_node : intra_node;
}

void require_devices_within_site(const SiteProfile& site, std::int64_t devices, const std::string& request) {
  if (site.nodes == 0) return;
  const std::int64_t has = std::int64_t{site.nodes} * site.devices_per_node;
  SB_USER_CHECK(devices <= has, "{} asks for {} devices, but site '{}' ({}) has {} node{} of {} devices ({} in all)",
                request, devices, site.name, site.source, site.nodes, site.nodes == 1 ? "" : "s", site.devices_per_node,
                has);
}

SiteProfile parse_site_profile(const YAML::Node& root, const std::string& source) {
  SB_USER_CHECK(root && root.IsMap(), "{}: a site profile must be a mapping of keys to values",
                source);
  const Mapping top(root, "", source,
                    {"name", "device", "devices_per_node", "peak_flops", "memory_bytes",
                     "memory_bandwidth", "links", "price_per_device_hour", "currency", "power_watts",
                     "calibrated", "scheduler", "device_is_cpu_core", "gemm", "peak_flops_source", "nodes"});
  SiteProfile p;
  p.source = source;
  p.name = top.required<std::string>("name");
  p.device = top.required<std::string>("device");
  p.devices_per_node = top.required<int>("devices_per_node");
  p.device_is_cpu_core = top.has("device_is_cpu_core") && top.required<bool>("device_is_cpu_core");
  SB_USER_CHECK(p.devices_per_node >= 1 && p.devices_per_node <= kMostDevicesPerNode,
                "{}: 'devices_per_node' must be from 1 to {}, got {}", source, kMostDevicesPerNode, p.devices_per_node);
  if (top.has("nodes")) {
    p.nodes = top.required<int>("nodes");
    SB_USER_CHECK(p.nodes >= 1 && p.nodes <= kMostNodes, "{}: 'nodes' must be from 1 to {}, got {}", source,
                  kMostNodes, p.nodes);
  }
  p.peak_flops = read_per_precision(top, "peak_flops", source, true, false);
  if (top.has("peak_flops_source")) p.peak_flops_source = top.required<std::string>("peak_flops_source");
  p.memory_bytes = top.positive("memory_bytes");
  p.memory_bandwidth = top.positive("memory_bandwidth");
  const Mapping links(top.child("links"), "links", source, {"intra_node", "inter_node"});
  p.intra_node = read_link(links, "intra_node", source, "bandwidth", "latency", true);
  p.inter_node = read_link(links, "inter_node", source, "bandwidth", "latency", true);
  SB_USER_CHECK(p.intra_node.nccl.has_value() == p.inter_node.nccl.has_value(),
                "{}: 'links.intra_node.nccl' and 'links.inter_node.nccl' go together (give both or neither)", source);
  p.price_per_device_hour = top.optional_positive("price_per_device_hour");
  if (top.has("currency")) p.currency = top.required<std::string>("currency");
  SB_USER_CHECK(p.currency.size() == 3 && std::all_of(p.currency.begin(), p.currency.end(), [](char ch) {
                  return ch >= 'A' && ch <= 'Z';
                }), "{}: 'currency' must be a three-letter ISO 4217 code such as USD or EUR, got '{}'", source, p.currency);
  p.power_watts = top.positive("power_watts");
  if (top.has("calibrated")) {
    const Mapping c(top.child("calibrated"), "calibrated", source,
                    {"gemm_efficiency", "memory_efficiency", "page_refault_s", "links", "kernel_times", "date",
                     "command", "cpu"});
    if (c.has("cpu")) p.calibrated_cpu = c.required<std::string>("cpu");
    if (c.has("gemm_efficiency"))
      p.gemm_efficiency = read_per_precision(c, "gemm_efficiency", source, false, true);
    p.memory_efficiency = c.optional_positive("memory_efficiency");
    p.page_refault_s = c.optional_positive("page_refault_s");
    SB_USER_CHECK(!p.memory_efficiency || *p.memory_efficiency <= 1.0,
                  "{}: 'calibrated.memory_efficiency' must lie in (0, 1], got {}", source,
                  p.memory_efficiency.value_or(0));
    if (c.has("kernel_times")) {
      p.kernel_times_file = c.required<std::string>("kernel_times");
      std::filesystem::path table(p.kernel_times_file);
      if (table.is_relative()) table = std::filesystem::path(source).parent_path() / table;
      SB_USER_CHECK(std::filesystem::exists(table), "{}: 'calibrated.kernel_times' names '{}', which does not exist",
                    source, table.string());
      p.kernel_times = std::make_shared<const KernelProfile>(KernelProfile::load(table));
    }
    if (c.has("links")) {
      const Mapping l(c.child("links"), "calibrated.links", source, {"intra_node", "inter_node"});
      if (l.has("intra_node"))
        p.calibrated_intra_node = read_link(l, "intra_node", source, "beta", "alpha", false, "gamma");
      if (l.has("inter_node"))
        p.calibrated_inter_node = read_link(l, "inter_node", source, "beta", "alpha", false, "gamma");
    }
  }
  if (top.has("gemm")) {
    const Mapping g(top.child("gemm"), "gemm", source, {"sm_count", "tile_m", "tile_n", "e_max", "e_max_fp8", "k_overhead", "e_attention",
                                                  "e_max_sm80", "k_overhead_sm80", "e_attention_sm80"});
    GemmModel model;
    model.sm_count = g.required<int>("sm_count");
    if (g.has("tile_m")) model.tile_m = g.required<int>("tile_m");
    if (g.has("tile_n")) model.tile_n = g.required<int>("tile_n");
    SB_USER_CHECK(model.sm_count >= 1 && model.tile_m >= 1 && model.tile_n >= 1,
                  "{}: 'gemm.sm_count', 'gemm.tile_m' and 'gemm.tile_n' must be at least 1", source);
    model.e_max = peak_fraction(g, "e_max", source);
    if (g.has("k_overhead")) model.k_overhead = k_steps(g, "k_overhead", source);
    if (g.has("e_max_fp8")) {
      model.e_max_fp8 = peak_fraction(g, "e_max_fp8", source);
      SB_USER_CHECK(p.peak_flops.count("fp8") == 1, "{}: 'gemm.e_max_fp8' is given but 'peak_flops.fp8' is not",
                    source);
    }
    if (g.has("e_attention")) model.e_attention = peak_fraction(g, "e_attention", source);
    if (g.has("e_max_sm80")) {  // kernels of compute capability 8.0's instructions: their own constants
      GemmModel::KernelConstants k{peak_fraction(g, "e_max_sm80", source), model.k_overhead, model.e_attention};
      if (g.has("k_overhead_sm80")) k.k_overhead = k_steps(g, "k_overhead_sm80", source);
      if (g.has("e_attention_sm80")) k.e_attention = peak_fraction(g, "e_attention_sm80", source);
      model.sm80 = k;
    } else {
      SB_USER_CHECK(!g.has("k_overhead_sm80") && !g.has("e_attention_sm80"),
                    "{}: 'gemm.k_overhead_sm80' and 'gemm.e_attention_sm80' go with 'gemm.e_max_sm80', which is not "
                    "given", source);
    }
    SB_USER_CHECK(p.gemm_efficiency.empty(),
                  "{}: 'gemm' and 'calibrated.gemm_efficiency' both set the GEMMs' efficiency; keep one", source);
    SB_USER_CHECK(!p.device_is_cpu_core, "{}: 'gemm' models a GPU's SMs; a CPU-core site may not carry it", source);
    p.gemm = model;
  }
  p.scheduler = read_scheduler(top, p.device, source);
  return p;
}

std::filesystem::path site_profile_path(const std::string& site, const std::string& what) {
  if (std::filesystem::exists(site) || site.find('/') != std::string::npos) return site;
  const std::vector<std::filesystem::path> dirs = site_profile_dirs();
  std::string searched;
  for (const std::filesystem::path& dir : dirs) {
    const std::filesystem::path profile = dir / (site + ".yaml");
    if (std::filesystem::exists(profile)) return profile;
    searched += (searched.empty() ? "" : " or ") + dir.string();
  }
  throw UserError(fmt::format("{} '{}' is neither a file nor a profile in {}", what, site, searched));
}

SiteProfile load_site_profile(const std::filesystem::path& path) {
  return parse_site_profile(plan::load_yaml_file(path), path.string());
}

}  // namespace sb::costmodel
