// SPDX-License-Identifier: Apache-2.0
// Fuzzes the byte-level text path: load_sotu on a folder holding the input as one speech (it
// must refuse with sb::UserError), then the corpus split and the window sampler on the input's
// bytes with batch, seq_len, step and seed taken from its first 8 bytes: every window must lie
// inside the text and every token be a byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "data/text_corpus.hpp"
#include "fuzz_scratch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto folder = sb::fuzz::scratch_dir() / "sotu";
  std::filesystem::create_directories(folder);
  sb::fuzz::write_scratch("sotu/1790_george_washington_n.txt", data, size);
  sb::fuzz::expect_only_user_errors([&] { sb::data::load_sotu(folder); });
  if (size < 8) return 0;
  const std::int64_t batch = 1 + data[0] % 8, seq_len = 1 + data[1] % 64;
  const std::int64_t step = data[2] | (data[3] << 8);
  const std::uint64_t seed = data[4] | (data[5] << 8);
  const std::int64_t eval_batches = 1 + data[6] % 4;
  sb::fuzz::expect_only_user_errors([&] {
    const sb::data::TextCorpus corpus("fuzz", std::vector<std::uint8_t>(data + 8, data + size), 0.1);
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(batch * seq_len)), targets(tokens.size());
    const auto check = [&] {
      for (std::size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] > 255 || targets[i] < 0 || targets[i] > 255) std::abort();
    };
    for (const auto text : {corpus.train(), corpus.heldout()}) {
      sb::fuzz::expect_only_user_errors([&] {
        const sb::data::WindowSampler sampler(text, batch, seq_len, seed);
        sampler.training_batch(step, tokens.data(), targets.data());
        check();
        for (std::int64_t i = 0; i < eval_batches; ++i) {
          sampler.evaluation_batch(i, eval_batches, tokens.data(), targets.data());
          check();
        }
      });
    }
  });
  return 0;
}
