// SPDX-License-Identifier: Apache-2.0
// Reads the case that `predict` is asked about: the training config format (train/config.hpp)
// with `data` optional, since a prediction reads no data. Leaves out the prediction itself.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "plan/config.hpp"

namespace sb::costmodel {

// load_train_config, after giving a case without `data` the model family's data set (sotu for
// the GPT, mnist for the ResNet) so that spec-only sizes need no data section.
plan::TrainConfig load_predict_case(const std::filesystem::path& path,
                                     const std::vector<std::string>& overrides);
// The same for a case already read (and overridden): `source` names it in messages.
plan::TrainConfig parse_predict_case(YAML::Node root, const std::string& source);

}  // namespace sb::costmodel
