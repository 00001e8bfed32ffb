// SPDX-License-Identifier: Apache-2.0
// The training case configuration (YAML): parsing with strict keys, defaults, validation and
// `--set key=value` overrides. Every mistake is one sb::UserError sentence naming the file and
// key. Leaves out what the keys mean at run time (the trainer) and suites (suite.hpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sb::plan {

struct ModelSpec {
  std::string name;  // a named config ("gpt-tiny"), or "" for an inline description
  std::int64_t layers = 0, hidden = 0, heads = 0, seq_len = 0, vocab = 0;  // inline only
  // model.attention (inline only): "unfused" (what the trainer runs: the scores, softmax and
  // dropout as tensors of B·heads·T² kept for the backward) or "flash" (one fused kernel that
  // keeps none of them, FlashAttention; predict and plan only).
  std::string attention = "unfused";
  // model.cross_entropy: how the loss is taken on the logits, which decides the bytes a logit
  // holds. "fused" (the default; Megatron-LM's vocabulary-parallel cross entropy: the logits
  // upcast and normalised in place, the fp32 softmax kept, the 16-bit logits or their gradient
  // beside it; a run in the trainer's own layout counts the trainer's logits instead) or "unfused" (PyTorch's F.cross_entropy on logits upcast with .float(),
  // counted as its caching allocator reserves it: the fp32 log-softmax kept; in its backward the
  // fp32 gradients of its output and of its input beside it and the freed 16-bit logits still
  // cached, 14 bytes a logit at the peak; over tp ranks PyTorch's loss_parallel, whose
  // decomposed ops hold 18, and whose sequence parallelism keeps the all-gathered inputs of the
  // column-parallel linears (the head's and each block's two norm outputs);
  // predict and plan only).
  std::string cross_entropy = "fused";
  // model.kernels: the instructions the software's GPU kernels issue. "native" (the default:
  // the device's own, the site profile's gemm constants) or "sm80" (compute capability 8.0's,
  // Ampere's mma.sync without Hopper's wgmma and TMA, on a later GPU: FlashAttention 1 and 2,
  // CUDA 11 builds; the profile's gemm.e_max_sm80 and e_attention_sm80; predict and plan only).
  std::string kernels = "native";
};

struct DataSpec {
  std::string dataset;          // "sotu" (text), "spam-assassin" (labelled messages), "mnist" or "fashion-mnist" (images)
  std::filesystem::path path;   // resolved: data.path, else datasets_dir()/<dataset> (core/install_paths.hpp)
  // images, messages: train on the first N training samples only (a small labelled subset; 0 = all)
  std::int64_t train_samples = 0;
  // images, messages: evaluate on the first N test samples only (a quick look, not the accuracy
  // of record; 0 = the whole test set)
  std::int64_t test_samples = 0;
};

struct StrategySpec {
  std::int64_t dp = 1, tp = 1, pp = 1, interleave = 1, zero = 0;
  // micro-batches per rank and step (pipeline, gradient accumulation); 0 = batch.micro decides
  std::int64_t micro_batches = 0;
  // pipeline: blocks (GPT) or layers (ResNet: stem, blocks, head) per stage, pp entries; empty =
  // by stage_rule: `balanced` by the model's forward FLOPs, or `even` (Megatron-LM's split)
  std::vector<std::int64_t> stages;
  std::string stage_rule = "balanced";
  std::string schedule = "1f1b", recompute = "none";
  bool sequence_parallel = false;
  // the sequence-parallel all-gathers and reduce-scatters run under the linear layers' GEMMs
  // (Transformer Engine's userbuffers, NeMo's ub_tp_comm_overlap): predict and plan only
  bool tp_overlap = false;
  // the pipeline's sends and receives run on a stream of their own beside the compute, a stage
  // going on to its next op while its message travels (Megatron-LM's overlap_p2p_comm, which
  // Megatron-Core and NeMo turn on with interleaving): predict and plan only
  bool p2p_overlap = false;
  // each micro-batch's weight gradients accumulated into the main gradients by the weight-gradient
  // GEMM itself, not added in a pass of their own (Megatron-LM's gradient_accumulation_fusion,
  // which NeMo's and Megatron-Bridge's recipes run): 16-bit main gradients (precision.main_grads
  // storage) then cost no pass per micro-batch; the trainer's fp32 main gradients have none
  // either way; predict and plan only
  bool grad_accumulation_fusion = false;
  // under recompute full, each block's recomputed forward stops once it has rebuilt every tensor
  // its backward reads, as PyTorch's non-reentrant activation checkpoint does by default
  // (torch.utils.checkpoint use_reentrant=False, set_checkpoint_early_stop): the block's last
  // linear layer (the MLP's down projection), whose output only the residual add reads, is not
  // run again; predict and plan only
  bool recompute_early_stop = false;
  // data parallel: gradient bucket size (MiB), all-reduce overlapped with backward, and
  // BatchNorm statistics per rank ("local", the common default) or over all ranks ("sync")
  double bucket_mb = 25.0;
  bool overlap = true;
  std::string batchnorm = "local";
  std::string allreduce = "ring";  // ring (ours, bytes counted) | mpi (MPI_Iallreduce)
  std::int64_t world_size() const { return dp * tp * pp; }
};

struct PrecisionSpec {
  // fp32 | fp16 | bf16 | fp8 (predict and plan only: Transformer Engine's FP8 recipe, the GPT
  // blocks' linear layers in fp8, everything else, the weights and the activations in bf16)
  std::string dtype = "fp32";
  std::string loss_scale = "dynamic";  // dynamic | none | a number (fp16 only)
  double static_loss_scale = 0;        // that number, parsed by the config reader; 0 otherwise
  std::int64_t growth_interval = 2000;  // dynamic: good steps in a row before the scale doubles
  // fp32: fp32 main gradients beside 16-bit weights (Megatron-LM's default); storage: the main
  // gradients kept, accumulated and reduced in the storage dtype (Megatron-LM without
  // --accumulate-allreduce-grads-in-fp32, DeepSpeed's fp16 ZeRO; train/storage_main_gradients.hpp)
  std::string main_grads = "fp32";
  // Whether the main gradients are 16-bit: main_grads storage with a 16-bit dtype (fp32 storage
  // is the fp32 main gradients).
  bool sixteen_bit_main_gradients() const { return main_grads == "storage" && dtype != "fp32"; }
};

struct OptimizerSpec {
  std::string type = "adamw";  // adamw | sgd
  double lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1, grad_clip = 1.0;
  double momentum = 0.9;             // sgd only
  std::string schedule = "constant";  // constant | cosine (after warmup, down to min_lr)
  double min_lr = 0.0;
};

// Checkpoints (train/checkpoint.hpp): every `every` steps (0 = only when a termination signal
// asks) to `path` ("" = beside the result file,
// <out stem>.<run id>.ckpt.h5); resume `auto` continues
// from that file when it holds an unfinished run of this case, `never` always starts afresh.
struct CheckpointSpec {
  std::int64_t every = 0;
  std::string path;
  std::string resume = "auto";  // auto | never
  std::string resume_from;      // not a YAML key: `train --resume F` (the file must exist)
};

// Transfer learning: start from the parameters (and BatchNorm statistics) of another run's
// checkpoint of the same model, trained on any data; `freeze: backbone` trains only the head
// (ResNet's fc), keeping every other parameter at the checkpoint's value.
struct FinetuneSpec {
  std::string from;              // a checkpoint file (train/checkpoint.hpp); "" = no fine-tuning
  std::string freeze = "none";   // none | backbone
};

// Magnitude pruning of the starting weights (finetune.from), the mask kept through training:
// `unstructured` at `sparsity` over every GEMM weight matrix together, or `2:4`.
struct PruneSpec {
  std::string pattern;  // "" = no pruning | unstructured | 2:4
  double sparsity = 0;  // unstructured only, in [0, 1)
};

// Knowledge distillation (ResNet): a trained teacher, a checkpoint of `teacher_model` (a file,
// or run:<id> as for finetune.from), whose logits softened by `temperature` the student learns
// from beside the labels: loss (1 − alpha)·CE + alpha·T²·KL (models/resnet/soft_targets.hpp).
struct DistillSpec {
  std::string teacher;        // "" = no distillation
  std::string teacher_model;  // a named ResNet, e.g. resnet-mini
  double temperature = 4.0, alpha = 0.9;
};

// Post-training compression after the last step (compress/post_training_quantization.hpp):
// quantize none | int8; int8 calibrates activation ranges on calibration_batches batches of
// training data, then compares fp32 and int8 inference on the evaluation data and writes
// /runs/<id>/compression.
struct CompressSpec {
  std::string quantize = "none";
  std::int64_t calibration_batches = 8;
};

struct TrainConfig {
  std::string source;  // the file the config came from, for messages
  std::string name;    // run id; default "<model>" with the suite adding its case name
  ModelSpec model;
  DataSpec data;
  StrategySpec strategy;
  PrecisionSpec precision;
  OptimizerSpec optimizer;
  CheckpointSpec checkpoint;
  FinetuneSpec finetune;
  PruneSpec prune;
  DistillSpec distill;
  CompressSpec compress;
  std::int64_t global_batch = 16, micro_batch = 0;  // micro is per rank; 0 = global / dp
  std::int64_t seq_len = 0;                         // 0 = the model's maximum
  std::int64_t steps = 100, warmup_steps = 0, eval_every = 0, eval_batches = 8, log_every = 10;
  std::int64_t epochs = 0;  // when > 0: steps = epochs × steps per epoch of the data set
  std::string device = "cpu";
  // The site profile `train` predicts the run on (a name in jobs/sites or a path); "" = this
  // machine's profile on device cpu.
  std::string site;
  std::uint64_t seed = 1;
  std::int64_t threads = 0;  // 0 = every core of this machine
  std::string yaml;          // the effective config (after overrides), stored with the run
};

// Applies "a.b.c=value" to a YAML tree (value parsed as YAML, so numbers stay numbers).
void apply_override(YAML::Node& root, const std::string& assignment, const std::string& source);

// Parses YAML text; malformed YAML becomes "<source>:<line>:<col>: malformed YAML: ...".
YAML::Node parse_yaml_text(const std::string& text, const std::string& source);
YAML::Node load_yaml_file(const std::filesystem::path& path);

// The tree as YAML text that YAML 1.1 readers (PyYAML, which h5py users reach for) read back as
// yaml-cpp does: a scalar the source quoted, or one YAML 1.1 would take for a base-60 number
// (`2:4` reads as 124 there), is written double-quoted; flow and block styles are kept.
std::string yaml_text(const YAML::Node& node);

TrainConfig parse_train_config(const YAML::Node& root, const std::string& source);
TrainConfig load_train_config(const std::filesystem::path& path,
                              const std::vector<std::string>& overrides);

// Every top-level key a case accepts (suites use it to reject unknown keys early).
const std::vector<std::string>& train_config_keys();

}  // namespace sb::plan
