// Named GPT configs and their validation. Leaves out spec-only sizes for the cost model
// (1.3B ... 1T), which are never instantiated as models.
#include "models/gpt/gpt_config.hpp"

#include <array>
#include <utility>

#include "core/check.hpp"

namespace sb::gpt {

namespace {
const std::array<GptConfig, 4>& named_configs() {
  static const std::array<GptConfig, 4> configs{{
      {"gpt-nano", 2, 64, 4, 64, 256},
      {"gpt-tiny", 4, 256, 8, 128, 256},
      {"gpt-small", 6, 384, 6, 256, 256},
      {"gpt2-124m", 12, 768, 12, 1024, 50304},  // GPT-2 vocab 50257 padded to 64·786
  }};
  return configs;
}
}  // namespace

std::vector<std::string> gpt_config_names() {
  std::vector<std::string> names;
  for (const auto& config : named_configs()) names.push_back(config.name);
  return names;
}

GptConfig gpt_config_by_name(std::string_view name) {
  for (const auto& config : named_configs()) {
    if (config.name == name) return config;
  }
  throw UserError(fmt::format("unknown model '{}' (known: {})", name,
                              fmt::join(gpt_config_names(), ", ")));
}

void validate_gpt_config(const GptConfig& config) {
  const std::array<std::pair<const char*, std::int64_t>, 5> sizes{{
      {"layers", config.layers},
      {"channels", config.channels},
      {"heads", config.heads},
      {"max_seq_len", config.max_seq_len},
      {"vocab", config.vocab},
  }};
  for (const auto& [field, value] : sizes) {
    SB_USER_CHECK(value > 0, "gpt config '{}': {} must be positive, got {}", config.name, field,
                  value);
  }
  SB_USER_CHECK(config.channels % config.heads == 0,
                "gpt config '{}': channels ({}) must be divisible by heads ({})", config.name,
                config.channels, config.heads);
}

std::int64_t gpt_parameter_count(const GptConfig& config) {
  const std::int64_t L = config.layers, C = config.channels;
  return config.vocab * C + config.max_seq_len * C + L * (12 * C * C + 13 * C) + 2 * C;
}

}  // namespace sb::gpt
