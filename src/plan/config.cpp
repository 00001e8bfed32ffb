// SPDX-License-Identifier: Apache-2.0
// YAML → TrainConfig with strict keys and one-sentence errors.
#include "plan/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/bounded_file.hpp"
#include "core/check.hpp"
#include "core/install_paths.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/resnet/resnet_config.hpp"

namespace sb::plan {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The largest magnitude of any integer key (2^40, about 1.1e12): above every real step count,
// batch or size, and small enough that a product of two stays inside 64 bits.
constexpr std::int64_t kMaxConfigInteger = std::int64_t{1} << 40;

// Reads one mapping, rejecting keys it does not know.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, std::string source,
            std::vector<std::string> known)
      : node_(node), path_(std::move(path)), source_(std::move(source)), known_(std::move(known)) {
    SB_USER_CHECK(node_.IsMap(), "{}: '{}' must be a mapping of keys to values", source_, label());
    std::vector<std::string> seen;
    for (const auto& item : node_) {
      SB_USER_CHECK(item.first.IsScalar(), "{}: {} has a key that is a {}; keys must be plain names", source_,
                    path_.empty() ? "the config" : "'" + path_ + "'",
                    item.first.IsMap() ? "mapping" : item.first.IsSequence() ? "list" : "null");
      const auto key = item.first.Scalar();
      SB_USER_CHECK(std::find(known_.begin(), known_.end(), key) != known_.end(),
                    "{}: unknown key '{}' (known: {})", source_, qualified(key), join(known_));
      // yaml-cpp keeps both entries of a repeated key and reads the first: say so instead
      SB_USER_CHECK(std::find(seen.begin(), seen.end(), key) == seen.end(), "{}: key '{}' is given twice",
                    source_, qualified(key));
      seen.push_back(key);
    }
  }

  bool has(const std::string& key) const { return static_cast<bool>(node_[key]); }
  bool has_scalar(const std::string& key) const { return has(key) && node_[key].IsScalar(); }
  YAML::Node node(const std::string& key) const { return node_[key]; }

  template <class T>
  void read(const std::string& key, T& value) const {
    const YAML::Node n = node_[key];
    if (!n) return;
    try {
      SB_USER_CHECK(n.IsScalar(), "{}: '{}' must be a single value", source_, qualified(key));
      value = n.as<T>();
    } catch (const YAML::Exception&) {
      throw UserError(fmt::format("{}: '{}' has value '{}', which is not {}", source_,
                                  qualified(key), n.Scalar(), kind<T>()));
    }
    check_bounded(key, n, value);
  }

  // Every number finite and every signed integer within kMaxConfigInteger: a value beyond is a
  // typo, and products of a few of them (tokens per step, bytes) must stay inside 64 bits.
  template <class T>
  void check_bounded(const std::string& key, const YAML::Node& n, const T& value) const {
    if constexpr (std::is_floating_point_v<T>)
      SB_USER_CHECK(std::isfinite(value), "{}: '{}' has value '{}', which is not a finite number", source_,
                    qualified(key), n.Scalar());
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      SB_USER_CHECK(value >= -kMaxConfigInteger && value <= kMaxConfigInteger,
                    "{}: '{}' has value {}, beyond the {} an integer key may hold", source_, qualified(key), value,
                    kMaxConfigInteger);
  }

  // A list of integers: [2, 1, 1].
  void read_list(const std::string& key, std::vector<std::int64_t>& values) const {
    const YAML::Node n = node_[key];
    if (!n) return;
    SB_USER_CHECK(n.IsSequence(), "{}: '{}' must be a list of integers, e.g. [2, 2]", source_, qualified(key));
    values.clear();
    for (const YAML::Node& item : n) {
      try {
        SB_USER_CHECK(item.IsScalar(), "{}: '{}' must be a list of integers", source_, qualified(key));
        values.push_back(item.as<std::int64_t>());
      } catch (const YAML::Exception&) {
        throw UserError(fmt::format("{}: '{}' has item '{}', which is not an integer", source_, qualified(key),
                                    item.Scalar()));
      }
      check_bounded(key, item, values.back());
    }
  }

  std::string qualified(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

 private:
  std::string label() const { return path_.empty() ? "the config" : path_; }
  template <class T>
  static const char* kind() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    else if constexpr (std::is_integral_v<T>) return "an integer";
    else if constexpr (std::is_floating_point_v<T>) return "a number";
    else return "a string";
  }
  YAML::Node node_;
  std::string path_, source_;
  std::vector<std::string> known_;
};

void require_positive(std::int64_t value, const std::string& key, const std::string& source) {
  SB_USER_CHECK(value > 0, "{}: '{}' must be a positive integer, got {}", source, key, value);
}
// `value` at most `most`, `what` saying what the bound stands for.
void require_at_most(std::int64_t value, std::int64_t most, const std::string& key, const std::string& source,
                     const char* what) {
  SB_USER_CHECK(value <= most, "{}: '{}' is {}, more than the {} it may be ({})", source, key, value, most, what);
}
void require_non_negative(std::int64_t value, const std::string& key, const std::string& source) {
  SB_USER_CHECK(value >= 0, "{}: '{}' must be zero or positive, got {}", source, key, value);
}
void require_one_of(const std::string& value, const std::vector<std::string>& allowed,
                    const std::string& key, const std::string& source) {
  SB_USER_CHECK(std::find(allowed.begin(), allowed.end(), value) != allowed.end(),
                "{}: '{}' is '{}' but must be one of: {}", source, key, value, join(allowed));
}

std::filesystem::path default_data_path(const std::string& dataset) {
  return datasets_dir() / dataset;
}

}  // namespace

const std::vector<std::string>& train_config_keys() {
  static const std::vector<std::string> keys = {
      "name",   "model",        "data",       "strategy",     "precision", "batch",
      "seq_len", "steps", "epochs", "warmup_steps", "eval_every", "eval_batches", "log_every",
      "optimizer", "device",    "site",       "seed",       "threads", "checkpoint", "finetune", "prune", "distill",
      "compress"};
  return keys;
}

YAML::Node parse_yaml_text(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UserError(fmt::format("{}:{}:{}: malformed YAML: {}", source, e.mark.line + 1,
                                e.mark.column + 1, e.msg));
  }
}

namespace {

void emit_portable(YAML::Emitter& out, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& item : node) {
        out << YAML::Key;
        emit_portable(out, item.first);
        out << YAML::Value;
        emit_portable(out, item.second);
      }
      out << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : node) emit_portable(out, item);
      out << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar: {
      static const std::regex base60(R"([-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?)");
      const bool quoted_in_source = node.Tag() == "!";
      if (quoted_in_source || std::regex_match(node.Scalar(), base60)) out << YAML::DoubleQuoted;
      out << node.Scalar();
      break;
    }
    default:
      out << node;
  }
}

}  // namespace

std::string yaml_text(const YAML::Node& node) {
  YAML::Emitter out;
  emit_portable(out, node);
  return out.c_str();
}

YAML::Node load_yaml_file(const std::filesystem::path& path) {
  return parse_yaml_text(read_bounded_file(path, "config file", kMaxYamlBytes), path.string());
}

void apply_override(YAML::Node& root, const std::string& assignment, const std::string& source) {
  const auto eq = assignment.find('=');
  SB_USER_CHECK(eq != std::string::npos && eq > 0,
                "--set '{}' must have the form key=value (e.g. optimizer.lr=1e-3)", assignment);
  const std::string key = assignment.substr(0, eq);
  const YAML::Node value = parse_yaml_text(assignment.substr(eq + 1), "--set " + key);
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  SB_USER_CHECK(root.IsMap(), "{}: the config must be a mapping of keys to values", source);
  std::vector<std::string> parts;
  std::stringstream ss(key);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  // Walk with fresh handles (yaml-cpp's operator= on a node handle would rebind, not assign).
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (!child || !child.IsMap()) {
      SB_USER_CHECK(!child || child.IsNull(),
                    "--set {}: '{}' is a single value, not a mapping", key, parts[i]);
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child = chain.back()[parts[i]];
    }
    chain.push_back(child);
  }
  chain.back()[parts.back()] = value;
}

namespace {

// model: a named config, or a GPT described inline.
void read_model(const MapReader& top, TrainConfig& c, const std::string& source) {
  SB_USER_CHECK(top.has("model"), "{}: 'model' is missing (a name such as gpt-tiny, or a mapping "
                "with layers, hidden, heads, seq_len, vocab)", source);
  if (top.node("model").IsScalar()) {
    c.model.name = top.node("model").as<std::string>();
    std::vector<std::string> known = gpt::gpt_config_names();
    for (const std::string& name : resnet::resnet_config_names()) known.push_back(name);
    SB_USER_CHECK(std::find(known.begin(), known.end(), c.model.name) != known.end(),
                  "{}: unknown model '{}' in 'model' (known: {}; or describe a GPT inline with layers, hidden, "
                  "heads, seq_len, vocab)", source, c.model.name, join(known));
  } else {
    MapReader m(top.node("model"), "model", source,
                {"name", "layers", "hidden", "heads", "seq_len", "vocab", "attention", "cross_entropy", "kernels"});
    m.read("name", c.model.name);
    m.read("attention", c.model.attention);
    SB_USER_CHECK(c.model.attention == "unfused" || c.model.attention == "flash",
                  "{}: model.attention is '{}'; it must be unfused or flash", source, c.model.attention);
    m.read("cross_entropy", c.model.cross_entropy);
    SB_USER_CHECK(c.model.cross_entropy == "fused" || c.model.cross_entropy == "unfused",
                  "{}: model.cross_entropy is '{}'; it must be fused or unfused", source, c.model.cross_entropy);
    m.read("kernels", c.model.kernels);
    SB_USER_CHECK(c.model.kernels == "native" || c.model.kernels == "sm80",
                  "{}: model.kernels is '{}'; it must be native (kernels of the device's own instructions) or sm80 "
                  "(compute capability 8.0's mma.sync kernels on a later GPU)", source, c.model.kernels);
    const bool shaped = m.has("layers") || m.has("hidden") || m.has("heads") || m.has("seq_len") || m.has("vocab");
    if (!shaped && m.has("name")) {  // a named GPT with its attention chosen: {name: llama3-70b, attention: flash}
      const std::vector<std::string> known = gpt::gpt_config_names();
      SB_USER_CHECK(std::find(known.begin(), known.end(), c.model.name) != known.end(),
                    "{}: unknown GPT '{}' in 'model.name' (known: {}; or describe one inline with layers, hidden, "
                    "heads, seq_len, vocab)", source, c.model.name, join(known));
      return;
    }
    m.read("layers", c.model.layers);
    m.read("hidden", c.model.hidden);
    m.read("heads", c.model.heads);
    m.read("seq_len", c.model.seq_len);
    m.read("vocab", c.model.vocab);
    for (const char* key : {"layers", "hidden", "heads", "seq_len", "vocab"}) {
      SB_USER_CHECK(m.has(key), "{}: inline model needs '{}'", source, m.qualified(key));
    }
    require_positive(c.model.layers, "model.layers", source);
    require_positive(c.model.hidden, "model.hidden", source);
    require_positive(c.model.heads, "model.heads", source);
    require_positive(c.model.seq_len, "model.seq_len", source);
    require_positive(c.model.vocab, "model.vocab", source);
    require_at_most(c.model.layers, 1 << 16, "model.layers", source, "65536 blocks");
    require_at_most(c.model.hidden, 1 << 20, "model.hidden", source, "a width of 1M");
    require_at_most(c.model.heads, 1 << 16, "model.heads", source, "65536 heads");
    require_at_most(c.model.seq_len, 1 << 24, "model.seq_len", source, "16M tokens");
    require_at_most(c.model.vocab, 1 << 24, "model.vocab", source, "16M tokens");
    SB_USER_CHECK(c.model.hidden % c.model.heads == 0,
                  "{}: model.hidden ({}) must be divisible by model.heads ({})", source,
                  c.model.hidden, c.model.heads);
    if (c.model.name.empty())
      c.model.name = fmt::format("gpt-L{}-C{}-H{}", c.model.layers, c.model.hidden, c.model.heads);
  }
}

// data: the data set (and where it lies, and a labelled subset).
void read_data(const MapReader& top, TrainConfig& c, const std::string& source) {
  SB_USER_CHECK(top.has("data"), "{}: 'data' is missing (e.g. data: {{dataset: sotu}})", source);
  {
    const YAML::Node d = top.node("data");
    if (d.IsScalar()) {
      c.data.dataset = d.as<std::string>();
    } else {
      MapReader m(d, "data", source, {"dataset", "path", "train_samples", "test_samples"});
      m.read("dataset", c.data.dataset);
      m.read("train_samples", c.data.train_samples);
      require_non_negative(c.data.train_samples, "data.train_samples", source);
      m.read("test_samples", c.data.test_samples);
      require_non_negative(c.data.test_samples, "data.test_samples", source);
      std::string path;
      m.read("path", path);
      c.data.path = path;
    }
    require_one_of(c.data.dataset, {"sotu", "spam-assassin", "mnist", "fashion-mnist"}, "data.dataset", source);
    SB_USER_CHECK(c.data.train_samples == 0 || c.data.dataset != "sotu",
                  "{}: 'data.train_samples' takes a subset of labelled images or messages; {} is an unlabelled text "
                  "corpus", source, c.data.dataset);
    SB_USER_CHECK(c.data.test_samples == 0 || c.data.dataset != "sotu",
                  "{}: 'data.test_samples' takes a subset of labelled test images or messages; {} is an unlabelled "
                  "text corpus", source, c.data.dataset);
    if (c.data.path.empty()) c.data.path = default_data_path(c.data.dataset);
  }
}

// strategy: the grid, micro-batches, pipeline stages and schedule, data-parallel options.
void read_strategy(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("strategy")) {
    MapReader m(top.node("strategy"), "strategy", source,
                {"dp", "tp", "pp", "micro_batches", "schedule", "interleave", "zero", "recompute",
                 "sequence_parallel", "tp_overlap", "p2p_overlap", "grad_accumulation_fusion", "recompute_early_stop", "bucket_mb", "overlap", "batchnorm", "allreduce", "stages"});
    auto& s = c.strategy;
    m.read("dp", s.dp); m.read("tp", s.tp); m.read("pp", s.pp);
    m.read("micro_batches", s.micro_batches); m.read("schedule", s.schedule);
    if (m.has_scalar("stages")) {
      m.read("stages", s.stage_rule);
      require_one_of(s.stage_rule, {"balanced", "even"}, "strategy.stages", source);
    } else {
      m.read_list("stages", s.stages);
    }
    m.read("interleave", s.interleave); m.read("zero", s.zero);
    m.read("recompute", s.recompute); m.read("sequence_parallel", s.sequence_parallel);
    m.read("tp_overlap", s.tp_overlap);
    m.read("p2p_overlap", s.p2p_overlap);
    m.read("grad_accumulation_fusion", s.grad_accumulation_fusion);
    m.read("recompute_early_stop", s.recompute_early_stop);
    m.read("bucket_mb", s.bucket_mb); m.read("overlap", s.overlap); m.read("batchnorm", s.batchnorm);
    SB_USER_CHECK(s.bucket_mb > 0, "{}: 'strategy.bucket_mb' must be positive, got {}", source, s.bucket_mb);
    require_one_of(s.batchnorm, {"local", "sync"}, "strategy.batchnorm", source);
    m.read("allreduce", s.allreduce);
    require_one_of(s.allreduce, {"ring", "mpi"}, "strategy.allreduce", source);
    for (auto [value, key] : {std::pair{s.dp, "strategy.dp"}, {s.tp, "strategy.tp"}, {s.pp, "strategy.pp"},
                              {s.interleave, "strategy.interleave"}})
      require_positive(value, key, source);
    require_non_negative(s.micro_batches, "strategy.micro_batches", source);
    // ranks beyond any machine, and no more micro-batches than the pipeline simulation walks in a moment
    for (auto [value, key] : {std::pair{s.dp, "strategy.dp"}, {s.tp, "strategy.tp"}, {s.pp, "strategy.pp"}})
      require_at_most(value, 1 << 20, key, source, "1M ranks, more than any machine has");
    require_at_most(s.interleave, 1 << 10, "strategy.interleave", source, "1024 virtual stages");
    require_at_most(s.micro_batches, 1 << 16, "strategy.micro_batches", source, "65536 per step");
    SB_USER_CHECK(s.zero >= 0 && s.zero <= 3, "{}: 'strategy.zero' must be 0, 1, 2 or 3, got {}", source, s.zero);
    require_one_of(s.schedule, {"gpipe", "1f1b"}, "strategy.schedule", source);
    require_one_of(s.recompute, {"none", "selective", "full"}, "strategy.recompute", source);
  }
}

// precision: the storage dtype and its loss scaling.
void read_precision(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("precision")) {
    const YAML::Node p = top.node("precision");
    if (p.IsScalar()) {
      c.precision.dtype = p.as<std::string>();
    } else {
      MapReader m(p, "precision", source, {"dtype", "loss_scale", "growth_interval", "main_grads"});
      m.read("dtype", c.precision.dtype);
      m.read("main_grads", c.precision.main_grads);
      m.read("loss_scale", c.precision.loss_scale);
      m.read("growth_interval", c.precision.growth_interval);
    }
    require_one_of(c.precision.dtype, {"fp32", "fp16", "bf16", "fp8"}, "precision", source);
    require_one_of(c.precision.main_grads, {"fp32", "storage"}, "precision.main_grads", source);
    const std::string& scale = c.precision.loss_scale;
    if (scale != "dynamic" && scale != "none") {
      char* end = nullptr;
      const double value = std::strtod(scale.c_str(), &end);
      SB_USER_CHECK(end != scale.c_str() && *end == '\0' && std::isfinite(value) && value > 0,
                    "{}: 'precision.loss_scale' must be dynamic, none or a positive number, got '{}'", source, scale);
      c.precision.static_loss_scale = value;
    }
    SB_USER_CHECK(c.precision.growth_interval >= 1, "{}: 'precision.growth_interval' must be at least 1, got {}",
                  source, c.precision.growth_interval);
  }
}

// batch and the top-level keys of the run: length, evaluation, device, site, seed, threads.
void read_run_keys(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("batch")) {
    const YAML::Node b = top.node("batch");
    if (b.IsScalar()) {
      top.read("batch", c.global_batch);
    } else {
      MapReader m(b, "batch", source, {"global", "micro"});
      m.read("global", c.global_batch);
      m.read("micro", c.micro_batch);
    }
  }
  require_positive(c.global_batch, "batch.global", source);
  require_non_negative(c.micro_batch, "batch.micro", source);
  require_at_most(c.global_batch, std::int64_t{1} << 32, "batch.global", source, "4G samples per step");

  top.read("seq_len", c.seq_len);
  top.read("steps", c.steps);
  top.read("epochs", c.epochs);
  SB_USER_CHECK(!(top.has("steps") && top.has("epochs") && c.epochs > 0),
                "{}: give 'steps' or 'epochs', not both (epochs 0 turns epochs off)", source);
  require_non_negative(c.epochs, "epochs", source);
  top.read("warmup_steps", c.warmup_steps);
  top.read("eval_every", c.eval_every);
  top.read("eval_batches", c.eval_batches);
  top.read("log_every", c.log_every);
  top.read("device", c.device);
  top.read("site", c.site);
  top.read("seed", c.seed);
  top.read("threads", c.threads);
  require_non_negative(c.seq_len, "seq_len", source);
  require_positive(c.steps, "steps", source);
  require_non_negative(c.warmup_steps, "warmup_steps", source);
  require_non_negative(c.eval_every, "eval_every", source);
  require_positive(c.eval_batches, "eval_batches", source);
  require_positive(c.log_every, "log_every", source);
  require_non_negative(c.threads, "threads", source);
  require_at_most(c.threads, 1 << 20, "threads", source, "1M threads per rank");
  require_at_most(c.seq_len, 1 << 24, "seq_len", source, "16M tokens");
  require_one_of(c.device, {"cpu", "cuda"}, "device", source);
}

// checkpoint: how often, where, whether to resume.
void read_checkpoint(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("checkpoint")) {
    MapReader m(top.node("checkpoint"), "checkpoint", source, {"every", "path", "resume"});
    m.read("every", c.checkpoint.every);
    m.read("path", c.checkpoint.path);
    m.read("resume", c.checkpoint.resume);
    require_non_negative(c.checkpoint.every, "checkpoint.every", source);
    require_one_of(c.checkpoint.resume, {"auto", "never"}, "checkpoint.resume", source);
  }
}

// finetune: the checkpoint to start from and what stays frozen.
void read_finetune(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("finetune")) {
    MapReader m(top.node("finetune"), "finetune", source, {"from", "freeze"});
    m.read("from", c.finetune.from);
    m.read("freeze", c.finetune.freeze);
    SB_USER_CHECK(!c.finetune.from.empty(), "{}: 'finetune.from' must name the checkpoint file to start from",
                  source);
    require_one_of(c.finetune.freeze, {"none", "backbone"}, "finetune.freeze", source);
  }
}

// prune: the pattern and sparsity of the starting weights.
void read_prune(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("prune")) {
    MapReader m(top.node("prune"), "prune", source, {"pattern", "sparsity"});
    c.prune.pattern = "unstructured";
    m.read("pattern", c.prune.pattern);
    m.read("sparsity", c.prune.sparsity);
    require_one_of(c.prune.pattern, {"unstructured", "2:4"}, "prune.pattern", source);
    if (c.prune.pattern == "2:4")
      SB_USER_CHECK(!m.has("sparsity"), "{}: 'prune.sparsity' is fixed at 0.5 by pattern 2:4; leave it out",
                    source);
    else
      SB_USER_CHECK(m.has("sparsity") && c.prune.sparsity > 0 && c.prune.sparsity < 1,
                    "{}: 'prune.sparsity' must lie strictly between 0 and 1 (the fraction of weights removed), "
                    "got {}",
                    source, m.has("sparsity") ? fmt::format("{}", c.prune.sparsity) : "nothing");
    SB_USER_CHECK(!c.finetune.from.empty(),
                  "{}: 'prune' ranks trained weights: set finetune.from to the checkpoint to prune", source);
  }
}

// distill: the teacher and the loss mix.
void read_distill(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("distill")) {
    MapReader m(top.node("distill"), "distill", source, {"teacher", "teacher_model", "temperature", "alpha"});
    m.read("teacher", c.distill.teacher);
    m.read("teacher_model", c.distill.teacher_model);
    m.read("temperature", c.distill.temperature);
    m.read("alpha", c.distill.alpha);
    SB_USER_CHECK(!c.distill.teacher.empty() && !c.distill.teacher_model.empty(),
                  "{}: 'distill' needs 'teacher' (the teacher's checkpoint file, or run:<id>) and 'teacher_model' "
                  "(its model, e.g. resnet-mini)",
                  source);
    SB_USER_CHECK(c.distill.temperature > 0, "{}: 'distill.temperature' must be positive, got {}", source,
                  c.distill.temperature);
    SB_USER_CHECK(c.distill.alpha >= 0 && c.distill.alpha <= 1, "{}: 'distill.alpha' must lie in [0, 1], got {}",
                  source, c.distill.alpha);
  }
}

// compress: post-training int8 quantisation.
void read_compress(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("compress")) {
    MapReader m(top.node("compress"), "compress", source, {"quantize", "calibration_batches"});
    m.read("quantize", c.compress.quantize);
    m.read("calibration_batches", c.compress.calibration_batches);
    require_one_of(c.compress.quantize, {"none", "int8"}, "compress.quantize", source);
    require_positive(c.compress.calibration_batches, "compress.calibration_batches", source);
    if (c.compress.quantize == "int8") {
      SB_USER_CHECK(c.device == "cpu", "{}: 'compress.quantize: int8' runs int8 inference on the cpu, not device {}",
                    source, c.device);
      SB_USER_CHECK(c.precision.dtype == "fp32",
                    "{}: 'compress.quantize: int8' quantises an fp32 model, not precision {}", source,
                    c.precision.dtype);
      SB_USER_CHECK(c.strategy.tp == 1 && c.strategy.pp == 1,
                    "{}: 'compress.quantize: int8' needs the whole model on each rank (strategy tp 1 and pp 1)",
                    source);
    }
  }
}

// optimizer: type, rates, schedule.
void read_optimizer(const MapReader& top, TrainConfig& c, const std::string& source) {
  if (top.has("optimizer")) {
    MapReader m(top.node("optimizer"), "optimizer", source,
                {"type", "lr", "beta1", "beta2", "eps", "weight_decay", "grad_clip", "momentum",
                 "schedule", "min_lr"});
    auto& o = c.optimizer;
    m.read("type", o.type); m.read("lr", o.lr); m.read("beta1", o.beta1); m.read("beta2", o.beta2);
    m.read("eps", o.eps); m.read("weight_decay", o.weight_decay); m.read("grad_clip", o.grad_clip);
    m.read("momentum", o.momentum); m.read("schedule", o.schedule); m.read("min_lr", o.min_lr);
    require_one_of(o.type, {"adamw", "sgd"}, "optimizer.type", source);
    require_one_of(o.schedule, {"constant", "cosine"}, "optimizer.schedule", source);
    SB_USER_CHECK(o.lr > 0, "{}: 'optimizer.lr' must be positive, got {}", source, o.lr);
    SB_USER_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1,
                  "{}: 'optimizer.beta1' and 'optimizer.beta2' must lie in [0, 1)", source);
    SB_USER_CHECK(o.eps > 0, "{}: 'optimizer.eps' must be positive", source);
    SB_USER_CHECK(o.weight_decay >= 0 && o.grad_clip >= 0 && o.min_lr >= 0,
                  "{}: 'optimizer.weight_decay', 'grad_clip' and 'min_lr' must not be negative", source);
  }
}

}  // namespace

TrainConfig parse_train_config(const YAML::Node& root, const std::string& source) {
  SB_USER_CHECK(root && root.IsMap(), "{}: the config must be a mapping of keys to values (it is empty, a list or a single value)",
                source);
  TrainConfig c;
  c.source = source;
  MapReader top(root, "", source, train_config_keys());
  top.read("name", c.name);
  for (const auto read : {read_model, read_data, read_strategy, read_precision, read_run_keys, read_checkpoint,
                          read_finetune, read_prune, read_distill, read_compress, read_optimizer})
    read(top, c, source);
  c.yaml = yaml_text(root);
  return c;
}

TrainConfig load_train_config(const std::filesystem::path& path,
                              const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_file(path);
  for (const auto& assignment : overrides) apply_override(root, assignment, path.string());
  return parse_train_config(root, path.string());
}

}  // namespace sb::plan
