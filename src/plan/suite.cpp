// SPDX-License-Identifier: Apache-2.0
// Suite expansion: cases × matrix combinations over a base case.
#include "plan/suite.hpp"

#include <fmt/format.h>

#include <set>

#include "core/check.hpp"
#include "plan/config.hpp"
#include "plan/run_plan.hpp"

namespace sb::plan {

namespace {

std::string scalar_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// Deep-merges `overlay` into a copy of `base` (mappings merge, everything else replaces).
YAML::Node merged(const YAML::Node& base, const YAML::Node& overlay) {
  if (!overlay || overlay.IsNull()) return YAML::Clone(base);
  if (!base || !base.IsMap() || !overlay.IsMap()) return YAML::Clone(overlay);
  YAML::Node result = YAML::Clone(base);
  for (const auto& item : overlay) {
    const auto key = item.first.as<std::string>();
    result[key] = merged(result[key], item.second);
  }
  return result;
}

}  // namespace

std::string repeat_run_id(const std::string& case_id, std::int64_t repeat, std::int64_t repeats) {
  return repeats == 1 ? case_id : fmt::format("{}.r{}", case_id, repeat);
}

namespace {

constexpr std::int64_t kMaxRepeats = 100;

std::int64_t repeats_of(const YAML::Node& node, const std::string& where, const std::string& source) {
  std::int64_t repeats = 0;
  try {
    repeats = node.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    throw UserError(fmt::format("{}: {} 'repeats' must be a whole number, got '{}'", source, where, scalar_text(node)));
  }
  SB_USER_CHECK(repeats >= 1 && repeats <= kMaxRepeats, "{}: {} 'repeats' must be 1 to {}, got {}", source, where,
                kMaxRepeats, repeats);
  return repeats;
}

}  // namespace

Suite load_suite(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                 std::int64_t repeat_override) {
  const std::string source = path.string();
  const YAML::Node root = load_yaml_file(path);
  SB_USER_CHECK(root.IsMap(), "{}: a suite must be a mapping with 'base' and optional 'matrix' and 'cases'",
                source);
  for (const auto& item : root) {
    const auto key = item.first.as<std::string>();
    SB_USER_CHECK(key == "suite" || key == "description" || key == "base" || key == "matrix" || key == "cases" ||
                      key == "repeats",
                  "{}: unknown suite key '{}' (known: suite, description, base, matrix, cases, repeats)", source, key);
  }
  SB_USER_CHECK(repeat_override >= 0 && repeat_override <= kMaxRepeats, "run: --repeat must be 1 to {}, got {}",
                kMaxRepeats, repeat_override);
  const std::int64_t suite_repeats = root["repeats"] ? repeats_of(root["repeats"], "the suite's", source) : 1;
  Suite suite;
  suite.source = source;
  suite.name = root["suite"] ? root["suite"].as<std::string>() : path.stem().string();
  if (root["description"]) suite.description = root["description"].as<std::string>();
  const YAML::Node base = root["base"] ? root["base"] : YAML::Node(YAML::NodeType::Map);

  // Matrix: a cartesian product over keys (dotted keys allowed), in file order.
  std::vector<std::pair<std::string, std::vector<YAML::Node>>> axes;
  if (const YAML::Node matrix = root["matrix"]) {
    SB_USER_CHECK(matrix.IsMap(), "{}: 'matrix' must map keys to lists of values", source);
    for (const auto& item : matrix) {
      const auto key = item.first.as<std::string>();
      SB_USER_CHECK(item.second.IsSequence() && item.second.size() > 0,
                    "{}: matrix key '{}' must list at least one value", source, key);
      std::vector<YAML::Node> values(item.second.begin(), item.second.end());
      axes.emplace_back(key, values);
    }
  }
  std::vector<YAML::Node> explicit_cases;
  if (const YAML::Node cases = root["cases"]) {
    SB_USER_CHECK(cases.IsSequence(), "{}: 'cases' must be a list of case mappings", source);
    for (const auto& c : cases) {
      SB_USER_CHECK(c.IsMap(), "{}: each entry of 'cases' must be a mapping", source);
      explicit_cases.push_back(c);
    }
  }
  if (explicit_cases.empty()) explicit_cases.push_back(YAML::Node(YAML::NodeType::Map));

  std::set<std::string> ids;
  for (std::size_t ci = 0; ci < explicit_cases.size(); ++ci) {
    YAML::Node overlay = YAML::Clone(explicit_cases[ci]);
    std::int64_t repeats = suite_repeats;
    if (overlay["repeats"]) {  // how often the case runs, not a key of its config
      repeats = repeats_of(overlay["repeats"], fmt::format("case {}", ci + 1), source);
      overlay.remove("repeats");
    }
    if (repeat_override > 0) repeats = repeat_override;
    std::size_t combinations = 1;
    for (const auto& axis : axes) combinations *= axis.second.size();
    for (std::size_t combination = 0; combination < combinations; ++combination) {
      YAML::Node config = merged(base, overlay);
      std::vector<std::string> id_parts;
      if (overlay["name"]) id_parts.push_back(overlay["name"].as<std::string>());
      std::size_t rest = combination;  // mixed-radix digits, last axis fastest
      std::vector<std::size_t> index(axes.size());
      for (std::size_t a = axes.size(); a-- > 0;) {
        index[a] = rest % axes[a].second.size();
        rest /= axes[a].second.size();
      }
      for (std::size_t a = 0; a < axes.size(); ++a) {
        const auto& value = axes[a].second[index[a]];
        apply_override(config, axes[a].first + "=" + scalar_text(value), source);
        const auto key = axes[a].first.substr(axes[a].first.rfind('.') + 1);
        id_parts.push_back(value.IsScalar() && key == "model" ? value.Scalar() : key + "=" + scalar_text(value));
      }
      for (const auto& assignment : overrides) apply_override(config, assignment, source);
      const std::string case_label = fmt::format("{} (case {})", source, suite.cases.size() + 1);
      const TrainConfig parsed = parse_train_config(config, case_label);
      RunPlan run_plan = runnable_plan(parsed);
      std::string id;
      for (const auto& part : id_parts) id += (id.empty() ? "" : ",") + part;
      if (id.empty()) id = parsed.model.name;
      // finetune.from, distill.teacher: run:<case> names an earlier case (`scalebench run` passes
      // its checkpoint)
      for (const std::string& from : {parsed.finetune.from, parsed.distill.teacher})
        SB_USER_CHECK(from.rfind("run:", 0) != 0 || ids.count(from.substr(4)) > 0,
                      "{}: case '{}' starts from '{}', which is not an earlier case of the suite", source, id, from);
      SB_USER_CHECK(ids.insert(id).second, "{}: two cases have the same id '{}'; give them names", source, id);
      config["name"] = id;
      suite.cases.push_back({id, config, parsed.strategy.world_size(), std::move(run_plan), repeats});
    }
  }
  return suite;
}

}  // namespace sb::plan
