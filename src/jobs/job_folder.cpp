// SPDX-License-Identifier: Apache-2.0
// Paths of a submit folder, submitted.yaml, and the writing of configs and scripts.
#include "jobs/job_folder.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>

#include "core/check.hpp"
#include "jobs/job_script.hpp"
#include "jobs/shell_quote.hpp"
#include "plan/config.hpp"

namespace sb::jobs {

namespace fs = std::filesystem;

JobFiles job_files(const fs::path& dir, const std::string& id) {
  const fs::path jobs = dir / "jobs";
  return {jobs / (id + ".yaml"), jobs / (id + ".sh"), jobs / (id + ".out"), dir / "runs" / (id + ".h5")};
}

fs::path record_path(const fs::path& dir) { return dir / "jobs" / "submitted.yaml"; }

fs::path suite_result_path(const fs::path& dir, const std::string& suite) {
  return dir / (file_id(suite) + ".h5");
}

fs::path array_script_path(const fs::path& dir, const std::string& suite) {
  return dir / "jobs" / (file_id(suite) + ".array.sh");
}

fs::path array_log_prefix(const fs::path& dir, const std::string& suite) {
  return dir / "jobs" / (file_id(suite) + ".array-");
}

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  SB_USER_CHECK(out, "cannot write '{}'", path.string());
}

}  // namespace

void write_record(const fs::path& dir, const SubmissionRecord& record) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "suite" << YAML::Value << YAML::DoubleQuoted << record.suite;
  e << YAML::Key << "scheduler" << YAML::Value << record.scheduler;
  e << YAML::Key << "site" << YAML::Value << YAML::DoubleQuoted << record.site;
  e << YAML::Key << "array" << YAML::Value << record.array;
  e << YAML::Key << "cases" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : record.cases) {
    e << YAML::BeginMap;
    e << YAML::Key << "id" << YAML::Value << YAML::DoubleQuoted << c.id;
    e << YAML::Key << "file" << YAML::Value << YAML::DoubleQuoted << c.file_id;
    e << YAML::Key << "job_id" << YAML::Value << YAML::DoubleQuoted << c.job_id;
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  const fs::path path = record_path(dir);
  const fs::path temporary = path.string() + ".tmp";
  write_text(temporary, std::string("# written by scalebench submit; read by status and collect\n") + e.c_str() + "\n");
  fs::rename(temporary, path);
}

SubmissionRecord read_record(const fs::path& dir) {
  const fs::path path = record_path(dir);
  SB_USER_CHECK(fs::exists(path), "'{}' does not exist: '{}' is not a folder that `scalebench submit --out` filled",
                path.string(), dir.string());
  const YAML::Node root = plan::load_yaml_file(path);
  const std::string source = path.string();
  const auto text = [&](const YAML::Node& node, const char* key, const std::string& where) {
    SB_USER_CHECK(node[key] && node[key].IsScalar(), "{}: '{}' is missing{}", source, key, where);
    return node[key].as<std::string>();
  };
  SubmissionRecord r;
  r.suite = text(root, "suite", "");
  r.scheduler = text(root, "scheduler", "");
  r.site = text(root, "site", "");
  r.array = root["array"] && root["array"].as<bool>();
  SB_USER_CHECK(root["cases"] && root["cases"].IsSequence(), "{}: 'cases' must be a list", source);
  for (std::size_t i = 0; i < root["cases"].size(); ++i) {
    const YAML::Node c = root["cases"][i];
    const std::string where = fmt::format(" in case {}", i + 1);
    SubmittedCase sc{text(c, "id", where), text(c, "file", where), text(c, "job_id", where)};
    SB_USER_CHECK(sc.file_id == file_id(sc.id), "{}: case {} has file '{}', not the file name of its id", source,
                  i + 1, sc.file_id);
    r.cases.push_back(sc);
  }
  return r;
}

PreparedSuite prepare_suite_jobs(const plan::Suite& suite, const costmodel::SiteProfile& site, Scheduler scheduler,
                                 const fs::path& dir, const std::string& exe, bool array) {
  SB_USER_CHECK(!array || scheduler == Scheduler::slurm,
                "--array writes Slurm job arrays only; submit to {} without --array", scheduler_name(scheduler));
  fs::create_directories(dir / "jobs");
  fs::create_directories(dir / "runs");
  PreparedSuite prepared;
  prepared.record = {suite.name, scheduler_name(scheduler), site.name, array, {}};
  std::set<std::string> names;
  std::vector<JobSpec> specs;
  for (const auto& c : suite.cases) {
    const std::string id = file_id(c.id);
    SB_USER_CHECK(names.insert(id).second,
                  "{}: two cases ('{}' and another) share the file name '{}'; rename one", suite.source, c.id, id);
    const JobFiles files = job_files(dir, id);
    const fs::path config = fs::absolute(files.config), result = fs::absolute(files.result);
    YAML::Emitter emitter;
    emitter << c.config;
    write_text(config, std::string(emitter.c_str()) + "\n");
    specs.push_back(make_job_spec(suite.name, c, site, exe,
                                  {config, result, fs::absolute(files.script), fs::absolute(files.log)}));
    if (!array) {
      prepared.script_paths.push_back(files.script);
      prepared.scripts.push_back(write_job_script(scheduler, specs.back()));
    }
    prepared.record.cases.push_back({c.id, id, ""});
  }
  if (array) {
    prepared.script_paths.push_back(array_script_path(dir, suite.name));
    prepared.scripts.push_back(write_slurm_array_script(
        specs, directive_value(suite.name, fmt::format("the suite name '{}'", suite.name)), suite.source));
  }
  for (std::size_t i = 0; i < prepared.scripts.size(); ++i) {
    write_text(prepared.script_paths[i], prepared.scripts[i]);
    fs::permissions(prepared.script_paths[i], fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  }
  return prepared;
}

}  // namespace sb::jobs
