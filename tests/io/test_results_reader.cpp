// SPDX-License-Identifier: Apache-2.0
// Reader refusals (missing, foreign, wrong object or field) and the inspect summary text.
// Leaves out the field-by-field round trip (test_results_file.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>

#include "example_run.hpp"
#include "io/h5_check.hpp"
#include "io/results_reader.hpp"

namespace sb::io {
namespace {

using testing::ScratchFile;

void write_example_file(const std::filesystem::path& path) {
  ResultsFile file = ResultsFile::create(path);
  RunWriter run = file.begin_run("gpt-nano-dp2", testing::example_run_attributes());
  for (std::int64_t s = 0; s < 4; ++s) run.append_step(testing::example_step(s));
  for (const EvalRow& row : testing::example_evals()) run.append_eval(row);
  run.write_memory(testing::example_memory());
  run.write_ranks(testing::example_ranks());
  run.append_timeline(testing::example_timeline());
  run.write_context({{"hostnames", std::string("node1,node2")},
                     {"cpu_model", std::string("Test CPU 9000")},
                     {"cores", std::int64_t{2}},
                     {"threads", std::int64_t{1}},
                     {"blas", std::string("OpenBLAS 0.3.21")},
                     {"build_type", std::string("Debug")}});
  run.write_summary({{"mfu", 0.125}});
  run.finish("ok", "");
  file.begin_run("empty", testing::example_run_attributes("resnet-mini"))
      .finish("failed", "rank 1 on node2: data file missing");
}

std::string user_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no UserError)";
}

TEST(ResultsReader, RefusesMissingAndForeignFiles) {
  EXPECT_EQ(user_error_of([] { list_runs("/nonexistent/r.h5"); }),
            "/nonexistent/r.h5 does not exist");
  const ScratchFile plain_file("reader_plain");
  const auto& plain = plain_file.path();
  H5Fclose(H5Fcreate(plain.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  EXPECT_EQ(user_error_of([&] { summarize_results(plain); }),
            plain.string() + " is not a scalebench result file (no schema_version attribute)");
  const ScratchFile text_file("reader_text");
  const auto& text = text_file.path();
  std::ofstream(text) << "not hdf5";
  EXPECT_NE(user_error_of([&] { list_runs(text); }).find("is not an HDF5 file"),
            std::string::npos);
}

// The summary gives the last held-out and the last test evaluation, each where the run has one
// (a GPT evaluates on its held-out split, the ResNet on the test set), and says when it has neither.
TEST(ResultsReader, SummaryGivesTheLastHeldOutAndTestEvaluations) {
  const ScratchFile scratch("reader_eval_summary");
  const auto& path = scratch.path();
  {
    ResultsFile file = ResultsFile::create(path);
    RunWriter resnet = file.begin_run("resnet-mini", testing::example_run_attributes("resnet-mini"));
    resnet.append_step(testing::example_step(0));
    resnet.append_eval({1, "train", 0.5, 0.8});
    resnet.append_eval({1, "test", 0.25, 0.9});
    resnet.append_eval({2, "test", 0.125, 0.99});
    resnet.append_eval({2, "train", 0.0625, 0.995});
    resnet.finish("ok", "");
    RunWriter untested = file.begin_run("untested", testing::example_run_attributes("resnet-mini"));
    untested.append_step(testing::example_step(0));
    untested.append_eval({1, "train", 0.5, 0.8});
    untested.finish("ok", "");
  }
  const std::string summary = summarize_results(path);
  EXPECT_NE(summary.find("last test loss 0.1250 nats/token at step 2, accuracy 99.00%"), std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("last held-out loss"), std::string::npos) << summary;
  EXPECT_NE(summary.find("no held-out or test evaluation recorded"), std::string::npos) << summary;
  const ScratchFile gpt_scratch("reader_eval_summary_gpt");
  write_example_file(gpt_scratch.path());  // example_evals: train, heldout, heldout, test
  const std::string gpt = summarize_results(gpt_scratch.path());
  EXPECT_NE(gpt.find("last held-out loss"), std::string::npos) << gpt;
  EXPECT_NE(gpt.find("last test loss"), std::string::npos) << gpt;
}

TEST(ResultsReader, NamesTheMissingObjectOrField) {
  const ScratchFile scratch("reader_missing");
  const auto& path = scratch.path();
  write_example_file(path);
  EXPECT_EQ(user_error_of([&] { read_column(path, "/runs/nope/steps", "loss"); }),
            path.string() + " has no /runs/nope/steps");
  const std::string bad_field = user_error_of([&] { read_column(path, "/runs/gpt-nano-dp2/steps", "los"); });
  EXPECT_NE(bad_field.find("has no field 'los' (fields: step, loss, lr,"), std::string::npos)
      << bad_field;
  EXPECT_NE(user_error_of([&] { read_column(path, "/runs/gpt-nano-dp2/eval", "split"); })
                .find("not numeric"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { read_column(path, "/runs/gpt-nano-dp2", "loss"); })
                .find("is not a table"),
            std::string::npos);
  EXPECT_NE(user_error_of([&] { read_attribute(path, "/runs/gpt-nano-dp2", "nope"); })
                .find("has no attribute 'nope'"),
            std::string::npos);
  EXPECT_EQ(count_rows(path, "/runs/empty/steps"), 0);
  EXPECT_TRUE(read_column(path, "/runs/empty/steps", "loss").empty());
  EXPECT_TRUE(has_object(path, "/runs/gpt-nano-dp2/context"));
  EXPECT_FALSE(has_object(path, "/runs/empty/context"));
}

// The file's bytes, and the offset of its first global heap object with an index above 0
// (where HDF5 keeps a variable-length string attribute's text).
struct FirstHeapObject {
  std::string bytes;
  std::size_t collection = std::string::npos;
  std::size_t object = std::string::npos;
};
FirstHeapObject first_heap_object(const std::filesystem::path& path) {
  FirstHeapObject found;
  std::ifstream in(path, std::ios::binary);
  found.bytes.assign(std::istreambuf_iterator<char>(in), {});
  found.collection = found.bytes.find(std::string("GCOL\x01\0\0\0", 8));
  if (found.collection != std::string::npos) found.object = found.collection + 16;
  return found;
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// fuzz_results_reader found it (2026-12-05): a 51-byte version 0 superblock claiming a group leaf
// node K of 64,774 made libhdf5 allocate and free B-tree nodes until the fuzzer's 4 GiB limit. The
// reader refuses the file before the library parses it; the example file's defaults still open,
// and so does the same bound in a user block's superblock.
TEST(ResultsReader, RefusesASuperblockWithOutOfRangeBtreeSizes) {
  const ScratchFile scratch("reader_superblock_k");
  const auto& path = scratch.path();
  const unsigned char found[] = {0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x77, 0x00,
                                 0x08, 0x08, 0x00, 0x06, 0xfd, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x0d, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0a, 0x00, 0x00};
  write_bytes(path, std::string(reinterpret_cast<const char*>(found), sizeof found));
  const std::string message = user_error_of([&] { summarize_results(path); });
  EXPECT_NE(message.find("superblock's group leaf node K is 64774"), std::string::npos) << message;

  write_example_file(path);
  EXPECT_NO_THROW(summarize_results(path));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(static_cast<unsigned char>(bytes[8]), 0) << "the writer keeps superblock version 0";
  bytes[18] = 0x01, bytes[19] = 0x20;  // group internal node K 8,193
  write_bytes(path, bytes);
  EXPECT_NE(user_error_of([&] { summarize_results(path); }).find("group internal node K is 8193"),
            std::string::npos);
}

// fuzz_results_reader found both: libhdf5 1.10 copies a damaged object size's worth of bytes
// (a crash) and loops forever on a zero-sized free-space object. The reader refuses the file first.
TEST(ResultsReader, RefusesADamagedGlobalHeapBeforeHdf5ReadsIt) {
  const ScratchFile scratch("reader_heap");
  const auto& path = scratch.path();
  write_example_file(path);
  FirstHeapObject heap = first_heap_object(path);
  ASSERT_NE(heap.collection, std::string::npos) << "the example file has no variable-length string";
  ASSERT_NE(static_cast<unsigned char>(heap.bytes[heap.object]), 0) << "first object is free space";
  EXPECT_NO_THROW(summarize_results(path));

  std::string too_long = heap.bytes;
  const std::uint64_t huge = 0x656e6f76;  // the size in the fuzzer's crash
  std::memcpy(&too_long[heap.object + 8], &huge, sizeof huge);
  write_bytes(path, too_long);
  const std::string message = user_error_of([&] { summarize_results(path); });
  EXPECT_NE(message.find(path.string() + " is damaged: the global heap collection at byte " +
                         std::to_string(heap.collection)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("more than the collection"), std::string::npos) << message;

  // object 0 (free space) of size 0 where the first object was: the walk would not advance
  std::string stuck = heap.bytes;
  std::memset(&stuck[heap.object], 0, 16);
  write_bytes(path, stuck);
  EXPECT_NE(user_error_of([&] { read_attribute(path, "/runs/gpt-nano-dp2", "model"); })
                .find("holds an empty free-space object"),
            std::string::npos);
}

// fuzz_results_reader found it (2026-12-07): a local heap whose data segment size claims 2^40 + 176
// bytes made libhdf5 1.10's local heap loader ask malloc for them (an abort under ASan). Every
// opener refuses the file first, naming the heap; the file as written opens.
TEST(ResultsReader, RefusesALocalHeapLargerThanTheFile) {
  const ScratchFile scratch("reader_local_heap");
  const auto& path = scratch.path();
  write_example_file(path);
  EXPECT_NO_THROW(summarize_results(path));
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t heap = bytes.find(std::string("HEAP\0\0\0\0", 8));
  ASSERT_NE(heap, std::string::npos) << "the example file has no local heap";
  std::string damaged = bytes;
  damaged[heap + 8 + 5] = 0x01;  // the size's sixth byte, as the fuzzer set it
  write_bytes(path, damaged);
  const std::string message = user_error_of([&] { summarize_results(path); });
  EXPECT_NE(message.find(path.string() + " is damaged: the local heap at byte " + std::to_string(heap) +
                         " claims a data segment of "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("more than the file's " + std::to_string(bytes.size())), std::string::npos) << message;
}

// fuzz_results_reader found it: a step table's compound type whose member `comm_s` claims offset
// 0x5B0038 in a 104-byte row made libhdf5 1.10's H5Dread conversion copy from freed memory. The
// reader refuses the table before reading it, whichever field is asked for.
TEST(ResultsReader, RefusesATableWhoseFieldLiesPastItsRow) {
  const ScratchFile scratch("reader_member_offset");
  const auto& path = scratch.path();
  write_example_file(path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  in.close();
  // the first step table's type: the member name padded to 8 bytes, then its 4-byte offset (56)
  const std::string member("comm_s\0\0\x38\0\0\0", 12);
  const std::size_t at = bytes.find(member);
  ASSERT_NE(at, std::string::npos) << "no comm_s member at offset 56 in the example file";
  bytes[at + 10] = '\x5b';  // offset 0x5B0038, the fuzzer's
  write_bytes(path, bytes);
  int refused = 0;
  for (const std::string& run : list_runs(path)) {
    for (const std::string& field : {"loss", "comm_s"}) {
      const std::string message = user_error_of([&] { read_column(path, "/runs/" + run + "/steps", field); });
      if (message.find("is damaged") == std::string::npos) continue;  // read, or a run without steps
      ++refused;
      EXPECT_EQ(message, path.string() + " is damaged: field 'comm_s' of /runs/" + run +
                             "/steps claims bytes [5963832, 5963840) of a 104-byte row");
    }
  }
  EXPECT_EQ(refused, 2) << "one table, both fields refused";
}

// fuzz_results_reader found it: a 150 KB file whose table claimed enough rows for reading one
// column to exhaust memory. A table that claims more rows than the file can hold (uncompressed,
// as scalebench writes them, with room for a compressed rewrite) is refused before any read.
TEST(ResultsReader, RefusesATableClaimingMoreRowsThanTheFileHolds) {
  const ScratchFile scratch("reader_huge_rows");
  const auto& path = scratch.path();
  write_example_file(path);
  constexpr hsize_t kClaimed = 1'000'000'000;
  {
    H5Handle file{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    ASSERT_GE(file.get(), 0);
    H5Handle steps{H5Dopen2(file.get(), "/runs/gpt-nano-dp2/steps", H5P_DEFAULT), H5Dclose};
    ASSERT_GE(steps.get(), 0);
    ASSERT_GE(H5Dset_extent(steps.get(), &kClaimed), 0);  // the rows past the written four: fill values
  }
  const std::string message = user_error_of([&] { read_column(path, "/runs/gpt-nano-dp2/steps", "loss"); });
  EXPECT_EQ(message.rfind(path.string() + " is damaged: /runs/gpt-nano-dp2/steps claims 1000000000 rows of ", 0), 0)
      << message;
  EXPECT_NE(user_error_of([&] { summarize_results(path); }).find("claims 1000000000 rows"), std::string::npos);
  EXPECT_EQ(read_column(path, "/runs/gpt-nano-dp2/timeline", "rank").size(), testing::example_timeline().size())
      << "the tables that were not changed still read";
}

TEST(ResultsReader, SummaryCoversEveryRun) {
  const ScratchFile scratch("reader_summary");
  const auto& path = scratch.path();
  write_example_file(path);
  const std::string text = summarize_results(path);
  for (const std::string expected :
       {"schema version 1, written by scalebench ", "2 runs", "run gpt-nano-dp2: status ok",
        "model gpt-nano, dataset state_of_the_union, device cpu, precision fp32",
        "world 2 = dp 2 x tp 1 x pp 1", "steps recorded 4, final train loss 4.7500",
        "last held-out loss 4.9000 nats/token at step 2, accuracy 25.00%",
        "median step time 11.50 ms", "MFU 12.5%",
        "time per step (median, mean over ranks): compute 6.25 ms, tp comm 1.05 ms, p2p 700.0 us, bubble 2.00 ms",
        "activations 5.0 MiB", "total 9.0 MiB; peak RSS 110.0 MiB",
        "context: host node1,node2, cpu Test CPU 9000 (2 cores, 1 threads), blas OpenBLAS 0.3.21",
        "warning: measured in a Debug build", "run empty: status failed",
        "error: rank 1 on node2: data file missing", "no steps recorded"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing: " << expected << "\n" << text;
  }
}

}  // namespace
}  // namespace sb::io
