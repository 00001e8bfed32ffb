// SPDX-License-Identifier: Apache-2.0
// Parsing of procurement specs: strict keys, one sentence per mistake naming the file and the
// claim key at fault.
#include "validate/spec.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/bounded_file.hpp"
#include "core/check.hpp"

namespace sb::validate {

namespace {

struct MeasureInfo {
  Measure measure;
  const char* key;
  std::vector<std::string> selectors;  // keys of its mapping
  std::vector<std::string> required;
};

const std::vector<MeasureInfo>& measures() {
  static const std::vector<MeasureInfo> list = {
      {Measure::gemm_tflops, "gemm_tflops", {"precision", "m", "n", "k", "path"}, {"precision"}},
      {Measure::busbw_gbps, "busbw_gbps", {"collective", "size", "ranks", "path"}, {"collective", "size", "ranks"}},
      {Measure::tokens_per_s, "tokens_per_s", {"run"}, {"run"}},
      {Measure::samples_per_s, "samples_per_s", {"run"}, {"run"}},
      {Measure::mfu, "mfu", {"run"}, {"run"}},
      {Measure::scaling_efficiency, "scaling_efficiency", {"base", "scaled"}, {"base", "scaled"}},
  };
  return list;
}

constexpr const char* kTolerances[] = {"at_least", "at_least_pct", "within_pct"};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// One mapping of the spec, read with its dotted location for messages.
class Mapping {
 public:
  Mapping(const YAML::Node& node, std::string where, std::string source, std::vector<std::string> known)
      : node_(node), where_(std::move(where)), source_(std::move(source)) {
    SB_USER_CHECK(node_.IsMap(), "{}: '{}' must be a mapping of keys to values", source_, where_);
    for (const auto& item : node_) {
      const auto key = item.first.as<std::string>();
      SB_USER_CHECK(std::find(known.begin(), known.end(), key) != known.end(),
                    "{}: unknown key '{}' (known: {})", source_, at(key), join(known));
    }
  }

  bool has(const std::string& key) const { return static_cast<bool>(node_[key]); }
  YAML::Node node(const std::string& key) const { return node_[key]; }
  std::string at(const std::string& key) const {
    if (key.empty()) return where_;
    return where_.empty() ? key : where_ + "." + key;
  }

  std::string text(const std::string& key) const {
    const YAML::Node n = node_[key];
    SB_USER_CHECK(n.IsScalar(), "{}: '{}' must be a single value", source_, at(key));
    return n.Scalar();
  }

  double number(const std::string& key) const {
    const std::string value = text(key);
    try {
      const double x = node_[key].as<double>();
      SB_USER_CHECK(std::isfinite(x), "{}: '{}' is '{}', not a finite number", source_, at(key), value);
      return x;
    } catch (const YAML::Exception&) {
      throw UserError(fmt::format("{}: '{}' is '{}', not a number", source_, at(key), value));
    }
  }

  std::int64_t positive_integer(const std::string& key) const {
    const std::string value = text(key);
    std::int64_t x = 0;
    try {
      x = node_[key].as<std::int64_t>();
    } catch (const YAML::Exception&) {
      throw UserError(fmt::format("{}: '{}' is '{}', not an integer", source_, at(key), value));
    }
    SB_USER_CHECK(x >= 1, "{}: '{}' is {}; it must be at least 1", source_, at(key), x);
    return x;
  }

 private:
  YAML::Node node_;
  std::string where_, source_;
};

Claim parse_claim(const std::string& name, const YAML::Node& node, const std::string& source) {
  std::vector<std::string> known = {"claimed", "source"};
  for (const MeasureInfo& info : measures()) known.push_back(info.key);
  for (const char* tolerance : kTolerances) known.push_back(tolerance);
  const Mapping claim(node, "claims." + name, source, known);

  Claim c;
  c.name = name;
  const MeasureInfo* chosen = nullptr;
  std::vector<std::string> measure_names;
  for (const MeasureInfo& info : measures()) {
    measure_names.push_back(info.key);
    if (!claim.has(info.key)) continue;
    SB_USER_CHECK(chosen == nullptr, "{}: '{}' names two measures, '{}' and '{}'; give each its own claim", source,
                  claim.at(""), chosen ? chosen->key : "", info.key);
    chosen = &info;
  }
  SB_USER_CHECK(chosen != nullptr, "{}: claim '{}' names no measure (one of: {})", source, claim.at(""),
                join(measure_names));
  c.measure = chosen->measure;

  const Mapping selector(claim.node(chosen->key), claim.at(chosen->key), source, chosen->selectors);
  for (const std::string& key : chosen->required)
    SB_USER_CHECK(selector.has(key), "{}: '{}' is missing (needed by {})", source, selector.at(key), chosen->key);
  if (selector.has("run")) c.run = selector.text("run");
  if (selector.has("base")) c.base = selector.text("base");
  if (selector.has("scaled")) c.scaled = selector.text("scaled");
  if (selector.has("precision")) {
    c.precision = selector.text("precision");
    const std::set<std::string> precisions = {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"};
    SB_USER_CHECK(precisions.count(c.precision), "{}: '{}' is '{}' (known: fp32, tf32, fp16, bf16, fp8, int8)",
                  source, selector.at("precision"), c.precision);
  }
  if (selector.has("m")) c.m = selector.positive_integer("m");
  if (selector.has("n")) c.n = selector.positive_integer("n");
  if (selector.has("k")) c.k = selector.positive_integer("k");
  if (selector.has("collective")) {
    c.collective = selector.text("collective");
    const std::set<std::string> collectives = {"all_reduce", "reduce_scatter", "all_gather", "p2p"};
    SB_USER_CHECK(collectives.count(c.collective),
                  "{}: '{}' is '{}' (known: all_reduce, reduce_scatter, all_gather, p2p)", source,
                  selector.at("collective"), c.collective);
  }
  if (selector.has("size")) {
    const auto bytes = parse_size(selector.text("size"));
    SB_USER_CHECK(bytes && *bytes >= 1, "{}: '{}' is '{}', not a size in bytes (e.g. 1048576, 64KiB, 1GiB)", source,
                  selector.at("size"), selector.text("size"));
    c.size_bytes = *bytes;
  }
  if (selector.has("ranks")) c.ranks = selector.positive_integer("ranks");
  if (c.measure == Measure::busbw_gbps) c.path = "scalebench";
  if (selector.has("path")) c.path = selector.text("path");

  if (claim.has("claimed")) c.claimed = claim.number("claimed");
  if (claim.has("source")) c.source = claim.text("source");
  int tolerances = 0;
  for (const char* key : kTolerances) {
    if (!claim.has(key)) continue;
    ++tolerances;
    c.bound = claim.number(key);
    c.tolerance = std::string(key) == "at_least" ? Tolerance::at_least
                  : std::string(key) == "at_least_pct" ? Tolerance::at_least_pct
                                                       : Tolerance::within_pct;
  }
  SB_USER_CHECK(tolerances == 1, "{}: claim '{}' needs exactly one tolerance (at_least, at_least_pct or within_pct), "
                "found {}", source, claim.at(""), tolerances);
  if (c.tolerance != Tolerance::at_least) {
    SB_USER_CHECK(c.claimed.has_value(), "{}: '{}' needs 'claimed' (the figure the percentage is of)", source,
                  claim.at(tolerance_key(c.tolerance)));
    SB_USER_CHECK(*c.claimed > 0, "{}: '{}' is {}; a percentage needs a positive claimed figure", source,
                  claim.at("claimed"), *c.claimed);
    SB_USER_CHECK(c.bound >= 0, "{}: '{}' is {}; a percentage cannot be negative", source,
                  claim.at(tolerance_key(c.tolerance)), c.bound);
  }
  return c;
}

}  // namespace

const char* measure_key(Measure measure) {
  for (const MeasureInfo& info : measures())
    if (info.measure == measure) return info.key;
  return "?";
}

const char* tolerance_key(Tolerance tolerance) {
  return kTolerances[static_cast<int>(tolerance)];
}

std::optional<std::int64_t> parse_size(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  const std::int64_t number = std::stoll(text.substr(0, digits));
  std::string unit = text.substr(digits);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  const std::vector<std::pair<std::string, std::int64_t>> units = {
      {"", 1},         {"B", 1},          {"KiB", 1 << 10},  {"MiB", 1 << 20},
      {"GiB", 1 << 30}, {"KB", 1000},      {"MB", 1000000}, {"GB", 1000000000}};
  for (const auto& [name, factor] : units)
    if (unit == name) {
      if (number > (std::int64_t{1} << 62) / factor) return std::nullopt;
      return number * factor;
    }
  return std::nullopt;
}

Spec load_spec(const std::filesystem::path& file) {
  const std::string source = file.string();
  SB_USER_CHECK(std::filesystem::exists(file), "spec '{}' does not exist", source);
  const std::string text = read_bounded_file(file, "spec", kMaxYamlBytes);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UserError(fmt::format("{}: not valid YAML (line {}: {})", source, e.mark.line + 1, e.msg));
  }
  const Mapping top(root, "", source, {"spec", "description", "claims"});
  Spec spec;
  spec.name = top.has("spec") ? top.text("spec") : file.stem().string();
  if (top.has("description")) spec.description = top.text("description");
  SB_USER_CHECK(top.has("claims"), "{}: 'claims' is missing (a mapping of claim names to claims)", source);
  const YAML::Node claims = top.node("claims");
  SB_USER_CHECK(claims.IsMap() && claims.size() > 0,
                "{}: 'claims' must be a non-empty mapping of claim names to claims", source);
  std::set<std::string> names;
  for (const auto& item : claims) {
    const auto name = item.first.as<std::string>();
    SB_USER_CHECK(names.insert(name).second, "{}: claim 'claims.{}' appears twice", source, name);
    spec.claims.push_back(parse_claim(name, item.second, source));
  }
  return spec;
}

}  // namespace sb::validate
