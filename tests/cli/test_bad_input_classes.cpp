// SPDX-License-Identifier: Apache-2.0
// The bad-input corpus grown by class (tests/bad_inputs/*.tsv): every place a command reads a
// file gets each input that never ends (input_slots.tsv), every command gets each usage
// mistake (commands.tsv), and command_cases.tsv holds resource requests beyond the machine
// and outputs that cannot be written. Each case runs the real `scalebench` from the corpus
// folder and must exit 2 or 3 within 10 s with one sentence naming the input, leave nothing in
// its output folder and change no input file. Leaves out the per-file mistakes (cases.tsv).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "io/results_file.hpp"
#include "tests/io/example_run.hpp"

namespace sb::testing {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(SB_SOURCE_DIR) / "tests" / "bad_inputs";
constexpr double kMaxSeconds = 10;

struct ClassCase {
  std::string name, args, expected;  // expected: text the sentence must hold ({...} substituted)
  int usage = 0;                     // 1: a usage mistake, which must exit 2 exactly
  std::string environment;           // VAR=value set for the command (environment.tsv)
};

void PrintTo(const ClassCase& c, std::ostream* os) { *os << c.name << ": " << c.args; }

// The tab-separated lines of `file` with `fields` fields each; '#' starts a comment.
std::vector<std::vector<std::string>> read_table(const std::string& file, std::size_t fields) {
  std::ifstream in(kCorpus / file);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> row;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, '\t');) row.push_back(field);
    if (line.back() == '\t') row.emplace_back();
    if (row.size() != fields) throw std::runtime_error(file + ": not " + std::to_string(fields) + " fields: " + line);
    rows.push_back(row);
  }
  return rows;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// Inputs that never end or are not files, by the name the case gets: {fifo} and {folder} are
// made in the case's scratch folder.
const std::vector<std::pair<std::string, std::string>> kEndlessInputs = {
    {"dev_zero", "/dev/zero"}, {"dev_urandom", "/dev/urandom"}, {"fifo", "{fifo}"}, {"folder", "{folder}"}};

std::vector<ClassCase> endless_input_cases() {
  std::vector<ClassCase> cases;
  for (const auto& slot : read_table("input_slots.tsv", 2))
    for (const auto& [kind, path] : kEndlessInputs) {
      if (kind == "folder" && slot[0].ends_with("_folder")) continue;  // a folder is what they read
      cases.push_back({slot[0] + "_" + kind, replaced(slot[1], "{input}", path), path});
    }
  return cases;
}

// A required argument "--flag value" is named by its flag, "positional=value" by its name.
std::pair<std::string, std::string> argument_and_name(const std::string& required) {
  if (required.rfind("-", 0) == 0) return {required, required.substr(0, required.find(' '))};
  const auto eq = required.find('=');
  return {required.substr(eq + 1), required.substr(0, eq)};
}

std::vector<ClassCase> usage_cases() {
  std::vector<ClassCase> cases;
  for (const auto& row : read_table("commands.tsv", 2)) {
    std::vector<std::pair<std::string, std::string>> required;
    std::stringstream ss(row[1]);
    for (std::string item; std::getline(ss, item, '|');) required.push_back(argument_and_name(item));
    std::string all = row[0];
    for (const auto& [argument, name] : required) all += " " + argument;
    cases.push_back({row[0] + "_unknown_flag", all + " --no-such-flag", "--no-such-flag", 1});
    for (const auto& [dropped, name] : required) {
      std::string args = row[0];
      for (const auto& [argument, other] : required)
        if (argument != dropped) args += " " + argument;
      cases.push_back({row[0] + "_without_" + replaced(replaced(name, "-", ""), ".", "_"), args, name, 1});
    }
  }
  return cases;
}

// Bad values of each kind of variable (environment.tsv), by the name the case gets. OMP_NUM_THREADS
// is a "threads" kind: libgomp prints its own line about a value that is not a number before main.
const std::map<std::string, std::vector<std::pair<std::string, std::string>>> kBadEnvironmentValues = {
    {"integer", {{"text", "abc"}, {"negative", "-1"}, {"fraction", "1.5"}, {"overflow", "99999999999999999999"}}},
    {"word", {{"unknown", "bogus"}, {"huge", std::string(100000, 'x')}}},
    {"threads", {{"beyond_cpus", "50000"}, {"beyond_bound", "2000000"}}},
    {"file", {{"missing", "/no/such/program"}, {"device", "/dev/zero"}}}};

std::vector<ClassCase> environment_cases() {
  std::vector<ClassCase> cases;
  for (const auto& row : read_table("environment.tsv", 3))
    for (const auto& [kind, value] : kBadEnvironmentValues.at(row[1]))
      cases.push_back({row[0] + "_" + kind, row[2], row[0], 0, row[0] + "='" + value + "'"});
  return cases;
}

// Bad --set values of each kind of key (set_keys.tsv) on every command that takes --set.
const std::map<std::string, std::vector<std::pair<std::string, std::string>>> kBadSetValues = {
    {"integer", {{"negative", "-1"}, {"fraction", "2.5"}, {"overflow", "99999999999999999999"},
                 {"huge", "1099511627777"}, {"nan", ".nan"}, {"inf", ".inf"}}},
    {"number", {{"nan", ".nan"}, {"inf", ".inf"}, {"minus_inf", "-.inf"}, {"overflow", "1e999"}, {"text", "fast"}}}};
const std::vector<std::pair<std::string, std::string>> kSetCommands = {
    {"train", "train --config configs/valid_case.yaml --out {out}/out.h5"},
    {"predict", "predict --config configs/valid_case.yaml --site this-machine"}};

std::vector<ClassCase> set_value_cases() {
  std::vector<ClassCase> cases;
  for (const auto& row : read_table("set_keys.tsv", 2))
    for (const auto& [kind, value] : kBadSetValues.at(row[1]))
      for (const auto& [command, args] : kSetCommands)
        cases.push_back({command + "_" + replaced(row[0], ".", "_") + "_" + kind, args + " --set " + row[0] + "=" + value,
                         "'" + row[0] + "'"});
  return cases;
}

// Files that are not what an HDF5 slot (h5_slots.tsv) reads, made by CaseFolder: empty, text,
// a result file cut short, an HDF5 file with nothing in it.
const std::vector<std::string> kBadHdf5Inputs = {"{empty_h5}", "{text_h5}", "{truncated_h5}", "{bare_h5}"};

std::vector<ClassCase> hdf5_input_cases() {
  std::vector<ClassCase> cases;
  for (const auto& slot : read_table("h5_slots.tsv", 2))
    for (const std::string& input : kBadHdf5Inputs)
      cases.push_back({slot[0] + "_" + input.substr(1, input.size() - 5), replaced(slot[1], "{input}", input), input});
  return cases;
}

std::vector<ClassCase> command_cases() {
  std::vector<ClassCase> cases;
  for (const auto& row : read_table("command_cases.tsv", 3)) cases.push_back({row[0], row[1], row[2]});
  return cases;
}

// Every regular file a case may read, with its bytes: none may change.
std::map<fs::path, std::string> snapshot(const std::vector<fs::path>& roots) {
  std::map<fs::path, std::string> files;
  for (const fs::path& root : roots) {
    if (fs::is_regular_file(root)) {
      std::ifstream in(root, std::ios::binary);
      files[root] = std::string(std::istreambuf_iterator<char>(in), {});
      continue;
    }
    if (!fs::is_directory(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root))
      if (entry.is_regular_file()) {
        std::ifstream in(entry.path(), std::ios::binary);
        files[entry.path()] = std::string(std::istreambuf_iterator<char>(in), {});
      }
  }
  return files;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The placeholders of a case, in one scratch folder: {out} (empty), {fifo}, {folder}, {results},
// and the bad HDF5 inputs {empty_h5}, {text_h5}, {truncated_h5} (the first 3000 bytes of
// {results}) and {bare_h5} (valid HDF5, no group).
struct CaseFolder {
  explicit CaseFolder(const Scratch& scratch)
      : out(scratch.path("out")), fifo(scratch.path("fifo")), folder(scratch.path("a_folder")),
        results(scratch.path("results.h5")), empty_h5(scratch.path("empty.h5")), text_h5(scratch.path("text.h5")),
        truncated_h5(scratch.path("truncated.h5")), bare_h5(scratch.path("bare.h5")) {
    fs::create_directories(out);
    fs::create_directories(folder);
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    {
      io::ResultsFile file = io::ResultsFile::create(results);
      io::RunWriter run = file.begin_run("gpt-nano", io::testing::example_run_attributes());
      for (std::int64_t s = 0; s < 3; ++s) run.append_step(io::testing::example_step(s));
      run.finish("ok", "");
    }
    write_file(empty_h5, "");
    write_file(text_h5, "runs: not an HDF5 file\n");
    std::ifstream in(results, std::ios::binary);
    write_file(truncated_h5, std::string(std::istreambuf_iterator<char>(in), {}).substr(0, 3000));
    H5Fclose(H5Fcreate(bare_h5.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  }
  std::string substitute(std::string text) const {
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"{out}", out}, {"{fifo}", fifo}, {"{folder}", folder}, {"{results}", results},
             {"{empty_h5}", empty_h5}, {"{text_h5}", text_h5}, {"{truncated_h5}", truncated_h5},
             {"{bare_h5}", bare_h5}, {"{root}", SB_SOURCE_DIR}})
      text = replaced(text, key, value);
    return text;
  }
  fs::path out, fifo, folder, results, empty_h5, text_h5, truncated_h5, bare_h5;
};

class BadInputClass : public ::testing::TestWithParam<ClassCase> {};

TEST_P(BadInputClass, OneSentenceExitTwoOrThreeQuicklyNothingWrittenNothingChanged) {
  const ClassCase& c = GetParam();
  Scratch scratch;
  const CaseFolder folder(scratch);
  const std::string args = folder.substitute(c.args), expected = folder.substitute(c.expected);
  const std::vector<fs::path> inputs = {kCorpus / "configs", folder.results, fs::path(SB_SOURCE_DIR) / "suites",
                                        fs::path(SB_SOURCE_DIR) / "jobs" / "specs"};
  const auto before = snapshot(inputs);
  const auto start = std::chrono::steady_clock::now();
  // timeout: a hang fails this case in 30 s instead of holding ctest until its own limit
  const std::string environment = c.environment.empty() ? "" : "env " + c.environment + " ";
  const CommandResult r =
      scratch.run_command_line("cd '" + kCorpus.string() + "' && " + environment + "timeout -k 5 30 " + SB_EXE + " " + args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string& err = r.stderr_text;
  EXPECT_LT(seconds, kMaxSeconds) << "took " << seconds << " s: " << err;
  if (c.usage)
    EXPECT_EQ(r.exit_code, 2) << err;
  else
    EXPECT_TRUE(r.exit_code == 2 || r.exit_code == 3) << "exit " << r.exit_code << ": " << err;
  EXPECT_NE(err.find(expected), std::string::npos) << "expected '" << expected << "' in: " << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.rfind("scalebench: ", 0), 0u) << err;
  EXPECT_EQ(err.find("Traceback"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_empty(folder.out)) << "something was written into " << folder.out;
  EXPECT_TRUE(fs::is_fifo(folder.fifo)) << "the FIFO was replaced";
  EXPECT_TRUE(before == snapshot(inputs)) << "an input file changed";
}

auto case_name = [](const ::testing::TestParamInfo<ClassCase>& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(EndlessInputs, BadInputClass, ::testing::ValuesIn(endless_input_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(UsageErrors, BadInputClass, ::testing::ValuesIn(usage_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Requests, BadInputClass, ::testing::ValuesIn(command_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Environment, BadInputClass, ::testing::ValuesIn(environment_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(SetValues, BadInputClass, ::testing::ValuesIn(set_value_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Hdf5Inputs, BadInputClass, ::testing::ValuesIn(hdf5_input_cases()), case_name);

TEST(BadInputClassTables, EveryCommandHasItsUsageCases) {
  EXPECT_EQ(read_table("commands.tsv", 2).size(), 11u) << "a command is missing from commands.tsv";
  EXPECT_GE(endless_input_cases().size(), 50u);
}

}  // namespace
}  // namespace sb::testing
