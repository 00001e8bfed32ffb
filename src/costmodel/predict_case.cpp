// SPDX-License-Identifier: Apache-2.0
// load_predict_case: the train config parser with a default data set. Leaves out checks that
// the data exist: a prediction never opens them.
#include "costmodel/predict_case.hpp"

namespace sb::costmodel {

plan::TrainConfig load_predict_case(const std::filesystem::path& path,
                                     const std::vector<std::string>& overrides) {
  YAML::Node root = plan::load_yaml_file(path);
  for (const auto& assignment : overrides) plan::apply_override(root, assignment, path.string());
  return parse_predict_case(root, path.string());
}

plan::TrainConfig parse_predict_case(YAML::Node root, const std::string& source) {
  if (root.IsMap() && !root["data"]) {
    const YAML::Node model = root["model"];
    const bool resnet = model && model.IsScalar() && model.Scalar().rfind("resnet", 0) == 0;
    root["data"] = resnet ? "mnist" : "sotu";
  }
  return plan::parse_train_config(root, source);
}

}  // namespace sb::costmodel
