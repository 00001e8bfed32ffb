// SPDX-License-Identifier: Apache-2.0
// Checkpoint files: a round trip of attributes and every rank's tensors, partial reads, a
// refusal of files that are not checkpoints, and the atomic replacement: a writer killed with
// SIGKILL in the middle of writing leaves the previous checkpoint whole and loadable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "core/check.hpp"
#include "io/checkpoint_file.hpp"
#include <fmt/format.h>

namespace sb::io {
namespace {

namespace fs = std::filesystem;

// A checkpoint whose every value depends on `step`, so two are told apart element by element.
Checkpoint example(std::int64_t step, int ranks, std::size_t numel) {
  Checkpoint c;
  c.attributes = {{"step", step}, {"model", std::string("gpt-nano")}, {"loss_scale", 1024.0 * step}};
  for (int r = 0; r < ranks; ++r) {
    CheckpointRank rank{.rank = r, .dp_rank = r, .tp_rank = 0, .pp_rank = 0,
                        .optimizer_begin = static_cast<std::int64_t>(r * numel / ranks)};
    if (r == 0)
      for (std::size_t i = 0; i < numel; ++i) rank.parameters.push_back(static_cast<float>(step) + 1e-3f * i);
    rank.untrained_state = {static_cast<float>(step), -static_cast<float>(step)};
    std::vector<float> m, v;
    for (std::size_t i = 0; i < numel / ranks; ++i) {
      m.push_back(static_cast<float>(step * 1000 + r * 100) + 0.5f * i);
      v.push_back(static_cast<float>(step) * 0.25f + i);
    }
    rank.optimizer = {{"m", m}, {"v", v}};
    c.ranks.push_back(std::move(rank));
  }
  return c;
}

void expect_equal(const Checkpoint& a, const Checkpoint& b) {
  ASSERT_EQ(a.attributes, b.attributes);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].rank, b.ranks[r].rank);
    EXPECT_EQ(a.ranks[r].dp_rank, b.ranks[r].dp_rank);
    EXPECT_EQ(a.ranks[r].optimizer_begin, b.ranks[r].optimizer_begin);
    EXPECT_EQ(a.ranks[r].parameters, b.ranks[r].parameters);
    EXPECT_EQ(a.ranks[r].untrained_state, b.ranks[r].untrained_state);
    EXPECT_EQ(a.ranks[r].optimizer, b.ranks[r].optimizer);
  }
}

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("sb_checkpoint_{}_{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(CheckpointFile, RoundTripKeepsEveryValueAndReadsOnlyWantedRanks) {
  const fs::path dir = fresh_folder("roundtrip");
  const fs::path path = dir / "run.ckpt.h5";
  const Checkpoint written = example(7, 3, 300);
  write_checkpoint(path, written);
  expect_equal(read_checkpoint(path), written);
  EXPECT_EQ(std::get<std::int64_t>(checkpoint_attribute(read_checkpoint(path), "step", path)), 7);
  const Checkpoint partial = read_checkpoint(path, [](const CheckpointRank& r) { return r.rank == 1; });
  ASSERT_EQ(partial.ranks.size(), 3u);
  EXPECT_TRUE(partial.ranks[0].optimizer.empty());
  EXPECT_EQ(partial.ranks[1].optimizer, written.ranks[1].optimizer);
  EXPECT_EQ(fs::directory_iterator(dir)->path(), path);  // no temporary file left behind
  fs::remove_all(dir);
}

TEST(CheckpointFile, RefusesFilesThatAreNotCheckpoints) {
  const fs::path dir = fresh_folder("refuse");
  EXPECT_THROW(read_checkpoint(dir / "missing.h5"), UserError);
  { std::ofstream(dir / "text.h5") << "not hdf5"; }
  EXPECT_THROW(read_checkpoint(dir / "text.h5"), UserError);
  EXPECT_THROW(write_checkpoint(dir / "no-such-folder" / "x.h5", example(1, 1, 4)), UserError);
  fs::remove_all(dir);
}

// A local heap claiming more bytes than the file (what fuzz_results_reader found in a result file)
// is refused before libhdf5 allocates them, in a checkpoint too, naming the heap's byte.
TEST(CheckpointFile, RefusesALocalHeapLargerThanTheFile) {
  const fs::path dir = fresh_folder("local_heap");
  const fs::path path = dir / "run.ckpt.h5";
  write_checkpoint(path, example(3, 2, 40));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t heap = bytes.find(std::string("HEAP\0\0\0\0", 8));
  ASSERT_NE(heap, std::string::npos) << "the checkpoint has no local heap";
  bytes[heap + 8 + 5] = 0x01;  // its data segment's size + 2^40
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; }
  try {
    read_checkpoint(path);
    ADD_FAILURE() << "a 1 TiB local heap was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the local heap at byte " + std::to_string(heap)), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// The writer of step 2 runs in a child process that pauses after every dataset; the parent
// kills it with SIGKILL at a different moment each round, after its temporary file appeared.
// Every time, the checkpoint of step 1 must read back whole.
TEST(CheckpointFile, KillDuringWriteLeavesPreviousCheckpointLoadable) {
  const fs::path dir = fresh_folder("kill");
  const fs::path path = dir / "run.ckpt.h5";
  const Checkpoint first = example(1, 2, 2000), second = example(2, 2, 2000);
  write_checkpoint(path, first);
  for (int round = 0; round < 4; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::setenv("SB_CHECKPOINT_WRITE_PAUSE_MS", "40", 1);
      try {
        write_checkpoint(path, second);
      } catch (...) {
        std::_Exit(3);
      }
      std::_Exit(0);
    }
    const fs::path temporary = path.string() + fmt::format(".tmp-{}", child);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!fs::exists(temporary) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(fs::exists(temporary)) << "the writer never created " << temporary;
    // 2 ranks × 5 datasets × 40 ms: kill between 10 and 250 ms into a ~400 ms write
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + 80 * round));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer finished before the kill";
    expect_equal(read_checkpoint(path), first);
    fs::remove(temporary);
  }
  // and a writer left alone replaces it
  write_checkpoint(path, second);
  expect_equal(read_checkpoint(path), second);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sb::io
