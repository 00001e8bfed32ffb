// SPDX-License-Identifier: Apache-2.0
// Attributes to JSON objects, through the reader.
#include "io/results_json.hpp"

#include <cmath>

#include "io/results_reader.hpp"

namespace sb::io {

namespace {

nlohmann::json value_json(const AttrValue& value) {
  if (const double* d = std::get_if<double>(&value)) return std::isfinite(*d) ? nlohmann::json(*d) : nlohmann::json();
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

nlohmann::json attributes_json(const std::filesystem::path& file, const std::string& object) {
  if (!has_object(file, object)) return nullptr;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : read_attributes(file, object)) j[name] = value_json(value);
  return j;
}

}  // namespace

nlohmann::json results_json(const std::filesystem::path& file) {
  nlohmann::json j = attributes_json(file, "/");
  j["file"] = file.string();
  j["runs"] = nlohmann::json::array();
  for (const std::string& id : list_runs(file)) {
    const std::string run = "/runs/" + id;
    nlohmann::json r{{"id", id}, {"attributes", attributes_json(file, run)}};
    for (const char* group : {"context", "summary", "prediction", "compression"})
      r[group] = attributes_json(file, run + "/" + group);
    j["runs"].push_back(std::move(r));
  }
  return j;
}

}  // namespace sb::io
