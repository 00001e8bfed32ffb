// SPDX-License-Identifier: Apache-2.0
// Reader of schema-1 result files: attribute and column access plus the inspect summary.
// Leaves out caching: every call opens the file, reads what it needs and closes it.
#include "io/results_reader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <numeric>
#include <optional>

#include "core/statistics.hpp"
#include "io/h5_objects.hpp"
#include "io/results_file.hpp"

namespace sb::io {

namespace {

using std::filesystem::path;

// An open file with error printing off; every public function starts with one.
struct OpenResults {
  explicit OpenResults(const path& file_path)
      : file_path(file_path), file(open_existing_results_file(file_path, H5F_ACC_RDONLY)),
        file_bytes(std::filesystem::file_size(file_path)) {}  // the opener has checked its heaps
  H5QuietErrors quiet;
  path file_path;
  H5Handle file;
  std::uintmax_t file_bytes;  // what the rows a table claims must fit in
};

H5Handle open_object(const OpenResults& results, const std::string& object) {
  if (object != "/" && !h5_path_exists(results.file.get(), object)) {
    throw UserError(fmt::format("{} has no {}", results.file_path.string(), object));
  }
  return H5Handle{SB_H5_CHECK(H5Oopen(results.file.get(), object.c_str(), H5P_DEFAULT)),
                  H5Oclose};
}

// A one-dimensional compound dataset, as every scalebench table is.
struct Table {
  H5Handle dataset;
  H5Handle type;
  std::int64_t rows = 0;
};

// libhdf5 1.10 trusts a compound type's member offsets: one past the row makes H5Dread's
// conversion copy from freed memory (fuzz_results_reader found it). Refuses a field that lies
// outside the row or overlaps the one before it.
void check_fields_inside_row(const OpenResults& results, const Table& table, const std::string& table_path) {
  const std::size_t row_bytes = H5Tget_size(table.type.get());
  const int count = SB_H5_CHECK(H5Tget_nmembers(table.type.get()));
  struct Field {
    std::size_t offset, bytes;
    unsigned index;
  };
  std::vector<Field> fields;
  for (int i = 0; i < count; ++i) {
    const auto index = static_cast<unsigned>(i);
    H5Handle member{SB_H5_CHECK(H5Tget_member_type(table.type.get(), index)), H5Tclose};
    fields.push_back({H5Tget_member_offset(table.type.get(), index), H5Tget_size(member.get()), index});
  }
  std::sort(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.offset < b.offset; });
  std::size_t free_from = 0;  // the first byte no earlier field uses
  for (const Field& f : fields) {
    const bool outside = f.bytes > row_bytes || f.offset > row_bytes - f.bytes;
    if (outside || f.offset < free_from) {
      char* name = H5Tget_member_name(table.type.get(), f.index);
      const std::string field = name ? name : "?";
      H5free_memory(name);
      throw UserError(fmt::format("{} is damaged: field '{}' of {} claims bytes [{}, {}) of a {}-byte row{}",
                                  results.file_path.string(), field, table_path, f.offset, f.offset + f.bytes,
                                  row_bytes, outside ? "" : ", overlapping the field before it"));
    }
    free_from = f.offset + f.bytes;
  }
}

// A table's dataspace may claim any number of rows: a damaged file of 150 KB claimed enough for
// reading one column to exhaust memory (fuzz_results_reader found it). scalebench writes its
// tables uncompressed, so the rows claimed must fit in the bytes the file holds; 64 times as many
// are allowed (a user's compressed rewrite), and 64 MiB whatever the file.
void check_rows_held(const OpenResults& results, const Table& table, hsize_t rows, const std::string& table_path) {
  constexpr double kCompressionAllowance = 64.0, kFloorBytes = 64.0 * 1024 * 1024;
  const std::size_t row_bytes = std::max<std::size_t>(H5Tget_size(table.type.get()), 1);
  const double claimed = static_cast<double>(rows) * static_cast<double>(row_bytes);
  if (claimed > std::max(kFloorBytes, static_cast<double>(results.file_bytes) * kCompressionAllowance)) {
    throw UserError(fmt::format("{} is damaged: {} claims {} rows of {} bytes ({:.3g} GB) in a file of {} bytes",
                                results.file_path.string(), table_path, rows, row_bytes, claimed / 1e9,
                                results.file_bytes));
  }
}

Table open_table(const OpenResults& results, const std::string& table) {
  Table opened{open_object(results, table), {}, 0};
  const bool is_dataset = H5Iget_type(opened.dataset.get()) == H5I_DATASET;
  if (is_dataset) {
    opened.type = H5Handle{SB_H5_CHECK(H5Dget_type(opened.dataset.get())), H5Tclose};
    H5Handle space{SB_H5_CHECK(H5Dget_space(opened.dataset.get())), H5Sclose};
    hsize_t rows = 0;
    if (H5Tget_class(opened.type.get()) == H5T_COMPOUND &&
        SB_H5_CHECK(H5Sget_simple_extent_ndims(space.get())) == 1) {
      SB_H5_CHECK(H5Sget_simple_extent_dims(space.get(), &rows, nullptr));
      check_rows_held(results, opened, rows, table);  // before the count is narrowed: it fits in the file
      opened.rows = static_cast<std::int64_t>(rows);
      check_fields_inside_row(results, opened, table);
      return opened;
    }
  }
  throw UserError(fmt::format("{} in {} is not a table (a one-dimensional compound dataset)",
                              table, results.file_path.string()));
}

std::vector<std::string> field_names(const Table& table) {
  const int count = SB_H5_CHECK(H5Tget_nmembers(table.type.get()));
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    char* name = H5Tget_member_name(table.type.get(), static_cast<unsigned>(i));
    SB_CHECK(name != nullptr, "H5Tget_member_name failed for member {}", i);
    names.emplace_back(name);
    H5free_memory(name);
  }
  return names;
}

// The member index of field, or UserError listing the fields there are.
unsigned field_index(const OpenResults& results, const Table& table, const std::string& table_path,
                     const std::string& field) {
  const int index = H5Tget_member_index(table.type.get(), field.c_str());
  if (index < 0) {
    const std::vector<std::string> names = field_names(table);
    throw UserError(fmt::format("{} in {} has no field '{}' (fields: {})", table_path,
                                results.file_path.string(), field, fmt::join(names, ", ")));
  }
  return static_cast<unsigned>(index);
}

// Reads one field of every row by handing HDF5 a one-member compound type of that name: the
// library picks the field out and converts it, so integers arrive as doubles.
std::vector<double> numeric_column(const OpenResults& results, const std::string& table_path,
                                   const std::string& field) {
  const Table table = open_table(results, table_path);
  const unsigned index = field_index(results, table, table_path, field);
  const H5T_class_t member_class = H5Tget_member_class(table.type.get(), index);
  if (member_class != H5T_INTEGER && member_class != H5T_FLOAT) {
    throw UserError(fmt::format("field '{}' of {} in {} is not numeric", field, table_path,
                                results.file_path.string()));
  }
  std::vector<double> values(static_cast<std::size_t>(table.rows));
  if (values.empty()) return values;
  H5Handle memory_type{SB_H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(double))), H5Tclose};
  SB_H5_CHECK(H5Tinsert(memory_type.get(), field.c_str(), 0, H5T_NATIVE_DOUBLE));
  SB_H5_CHECK(H5Dread(table.dataset.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                      values.data()));
  return values;
}

std::vector<std::string> fixed_string_column(const OpenResults& results,
                                             const std::string& table_path,
                                             const std::string& field) {
  const Table table = open_table(results, table_path);
  const unsigned index = field_index(results, table, table_path, field);
  H5Handle member_type{SB_H5_CHECK(H5Tget_member_type(table.type.get(), index)), H5Tclose};
  if (H5Tget_class(member_type.get()) != H5T_STRING ||
      SB_H5_CHECK(H5Tis_variable_str(member_type.get())) > 0) {
    throw UserError(fmt::format("field '{}' of {} in {} is not a fixed-length string", field,
                                table_path, results.file_path.string()));
  }
  const std::size_t width = H5Tget_size(member_type.get());
  std::vector<char> buffer(static_cast<std::size_t>(table.rows) * width);
  if (!buffer.empty()) {
    H5Handle memory_type{SB_H5_CHECK(H5Tcreate(H5T_COMPOUND, width)), H5Tclose};
    SB_H5_CHECK(H5Tinsert(memory_type.get(), field.c_str(), 0, member_type.get()));
    SB_H5_CHECK(H5Dread(table.dataset.get(), memory_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                        buffer.data()));
  }
  std::vector<std::string> values;
  for (std::int64_t row = 0; row < table.rows; ++row) {
    const char* begin = buffer.data() + static_cast<std::size_t>(row) * width;
    values.emplace_back(begin, std::find(begin, begin + width, '\0'));
  }
  return values;
}

std::vector<std::string> run_ids(const OpenResults& results) {
  if (!h5_path_exists(results.file.get(), "runs")) return {};
  H5Handle runs{SB_H5_CHECK(H5Gopen2(results.file.get(), "runs", H5P_DEFAULT)), H5Gclose};
  return h5_member_names(runs.get());
}

// ---- summary text ------------------------------------------------------------------------

std::optional<AttrValue> find_attribute(const Attributes& attributes, const std::string& name) {
  for (const auto& [key, value] : attributes) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::string text_of(const Attributes& attributes, const std::string& name) {
  const auto value = find_attribute(attributes, name);
  return value ? to_string(*value) : "?";
}

std::optional<double> number_of(const Attributes& attributes, const std::string& name) {
  const auto value = find_attribute(attributes, name);
  if (!value) return std::nullopt;
  if (const auto* integer = std::get_if<std::int64_t>(&*value)) return static_cast<double>(*integer);
  if (const auto* real = std::get_if<double>(&*value)) return *real;
  return std::nullopt;
}

Attributes attributes_if_present(const OpenResults& results, const std::string& object) {
  if (!h5_path_exists(results.file.get(), object)) return {};
  return h5_read_attributes(open_object(results, object).get());
}

std::string human_bytes(double bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (std::abs(bytes) >= 1024.0 && unit < 5) {
    bytes /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

std::string human_seconds(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.1f} us", seconds * 1e6);
  if (seconds < 1.0) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.3f} s", seconds);
}

double sum(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

double column_max(const std::vector<double>& values) {
  return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
}

// Two lines: steps and final loss; then step time, throughput and efficiency (the summary
// group's numbers when the run wrote them, otherwise computed from the steps table).
struct StepLines {
  std::string losses;
  std::string throughput;
};

StepLines summarize_steps(const OpenResults& results, const std::string& run,
                          const Attributes& run_attributes, const Attributes& summary) {
  const std::string steps = run + "/steps";
  const std::vector<double> loss = numeric_column(results, steps, "loss");
  if (loss.empty()) return {"  no steps recorded\n", ""};
  const std::vector<double> step_time = numeric_column(results, steps, "step_time_s");
  const double total_time = sum(step_time);
  const double tokens = sum(numeric_column(results, steps, "tokens"));
  const double samples = sum(numeric_column(results, steps, "samples"));
  const double flops = sum(numeric_column(results, steps, "flops"));
  const double devices = std::max(1.0, number_of(run_attributes, "world_size").value_or(1.0));
  const auto rate = [&](const char* key, double count) {
    return number_of(summary, key).value_or(total_time > 0 ? count / total_time : 0.0);
  };
  StepLines lines;
  lines.losses = fmt::format("  steps recorded {}, final train loss {:.4f}\n", loss.size(),
                             loss.back());
  lines.throughput = fmt::format("  median step time {}, ", human_seconds(median(step_time)));
  lines.throughput += tokens > 0
                          ? fmt::format("{:.0f} tokens/s", rate("tokens_per_s", tokens))
                          : fmt::format("{:.1f} samples/s", rate("samples_per_s", samples));
  const auto tflops = number_of(summary, "achieved_tflops");
  const double gflops = tflops ? *tflops * 1e3
                               : (total_time > 0 ? flops / total_time / devices / 1e9 : 0.0);
  lines.throughput += fmt::format(", {:.2f} GFLOP/s per device", gflops);
  if (const auto mfu = number_of(summary, "mfu"); mfu && std::isfinite(*mfu)) {
    lines.throughput += fmt::format(", MFU {:.1f}%", *mfu * 100);
  }
  lines.throughput += "\n";
  return lines;
}

std::string summarize_eval(const OpenResults& results, const std::string& run, bool sequences) {
  const std::string eval = run + "/eval";
  const std::vector<std::string> split = fixed_string_column(results, eval, "split");
  std::string text;
  // The GPT's held-out split and the ResNet's test set, each at its last evaluation.
  for (const auto& [name, label] : {std::pair<const char*, const char*>{"heldout", "held-out"}, {"test", "test"}}) {
    const auto last = std::find(split.rbegin(), split.rend(), name);
    if (last == split.rend()) continue;
    const auto row = static_cast<std::size_t>(split.rend() - last - 1);
    const double accuracy = numeric_column(results, eval, "accuracy")[row];
    text += fmt::format("  last {} loss {:.4f} nats/{} at step {:.0f}{}\n", label,
                        numeric_column(results, eval, "loss")[row], sequences ? "token" : "sample",
                        numeric_column(results, eval, "step")[row],
                        std::isnan(accuracy) ? "" : fmt::format(", accuracy {:.2f}%", accuracy * 100));
  }
  return text.empty() ? "  no held-out or test evaluation recorded\n" : text;
}

std::string summarize_memory(const OpenResults& results, const std::string& run) {
  const std::string memory = run + "/memory";
  if (open_table(results, memory).rows == 0) return "  no memory recorded\n";
  std::string text = "  peak tracked memory (max over ranks):";
  const char* sep = " ";
  for (const char* category : {"params", "grads", "optimizer", "activations", "workspace", "comm"}) {
    text += fmt::format("{}{} {}", sep, category,
                        human_bytes(column_max(numeric_column(results, memory, category))));
    sep = ", ";
  }
  return text + fmt::format("; total {}; peak RSS {}\n",
                            human_bytes(column_max(numeric_column(results, memory, "peak_tracked"))),
                            human_bytes(column_max(numeric_column(results, memory, "peak_rss"))));
}

// Where a step's time went: per rank the median over the steps after the first, then the mean
// over ranks. Files written before the timeline table existed say nothing.
std::string summarize_timeline(const OpenResults& results, const std::string& run) {
  const std::string timeline = run + "/timeline";
  if (!h5_path_exists(results.file.get(), timeline) || open_table(results, timeline).rows == 0) return "";
  const std::vector<double> step = numeric_column(results, timeline, "step"),
                            rank = numeric_column(results, timeline, "rank");
  const double first_step = *std::min_element(step.begin(), step.end());
  const bool several_steps = *std::max_element(step.begin(), step.end()) > first_step;
  std::string text = "  time per step (median, mean over ranks):";
  const char* sep = " ";
  for (const char* part : {"compute_s", "tp_comm_s", "p2p_s", "bubble_s", "dp_comm_s", "optimizer_s"}) {
    const std::vector<double> values = numeric_column(results, timeline, part);
    // grouped by the ranks the rows name (never counted up to the largest: a corrupt file's
    // rank column may hold 1e18)
    std::map<double, std::vector<double>> by_rank;
    for (std::size_t i = 0; i < values.size() && i < rank.size() && i < step.size(); ++i)
      if (!several_steps || step[i] > first_step) by_rank[rank[i]].push_back(values[i]);
    double total = 0;
    for (auto& [r, mine] : by_rank) total += median(mine);
    const std::string name(part, std::string_view(part).size() - 2);
    text += fmt::format("{}{} {}", sep, name == "tp_comm" ? "tp comm" : name == "dp_comm" ? "dp comm" : name,
                        human_seconds(by_rank.empty() ? 0.0 : total / static_cast<double>(by_rank.size())));
    sep = ", ";
  }
  return text + "\n";
}

std::string summarize_run(const OpenResults& results, const std::string& id) {
  const std::string run = "/runs/" + id;
  const Attributes a = attributes_if_present(results, run);
  const Attributes context = attributes_if_present(results, run + "/context");
  const Attributes summary = attributes_if_present(results, run + "/summary");
  std::string text = fmt::format("run {}: status {}\n", id, text_of(a, "status"));
  const std::string error = text_of(a, "error");
  if (!error.empty() && error != "?") text += fmt::format("  error: {}\n", error);
  text += fmt::format("  model {}, dataset {}, device {}, precision {}\n", text_of(a, "model"),
                      text_of(a, "dataset"), text_of(a, "device"), text_of(a, "precision"));
  text += fmt::format("  world {} = dp {} x tp {} x pp {} (micro-batches {}, schedule {}, "
                      "zero {}), global batch {}, seq_len {}\n",
                      text_of(a, "world_size"), text_of(a, "dp"), text_of(a, "tp"),
                      text_of(a, "pp"), text_of(a, "micro_batches"), text_of(a, "schedule"),
                      text_of(a, "zero"), text_of(a, "global_batch"), text_of(a, "seq_len"));
  const std::string finished = text_of(a, "finished_utc");
  text += fmt::format("  started {}, finished {}\n", text_of(a, "started_utc"),
                      finished.empty() ? "(not recorded)" : finished);
  const StepLines step_lines = summarize_steps(results, run, a, summary);
  text += step_lines.losses;
  text += summarize_eval(results, run, number_of(a, "seq_len").value_or(0.0) > 0);
  text += step_lines.throughput;
  text += summarize_timeline(results, run);
  text += summarize_memory(results, run);
  if (!context.empty()) {
    text += fmt::format("  context: host {}, cpu {} ({} cores, {} threads), blas {}\n",
                        text_of(context, "hostnames"), text_of(context, "cpu_model"),
                        text_of(context, "cores"), text_of(context, "threads"),
                        text_of(context, "blas"));
    if (text_of(context, "build_type") == "Debug") {
      text += "  warning: measured in a Debug build; timings are not representative\n";
    }
  }
  return text;
}

// A file that passed the schema check but that HDF5 then fails to read is damaged (cut short,
// overwritten): the user's file, not a fault here. Says so in one sentence naming it.
template <class F>
auto reading(const path& file, F&& read) {
  try {
    return read();
  } catch (const Error& e) {
    std::string detail = e.what();
    if (const auto call = detail.find(" (call `"); call != std::string::npos) detail.resize(call);
    throw UserError(fmt::format("{} is damaged or not a complete scalebench result file ({})", file.string(),
                                detail));
  }
}

}  // namespace

std::vector<std::string> list_runs(const path& file) {
  return reading(file, [&] { return run_ids(OpenResults(file)); });
}

std::vector<std::string> list_members(const path& file, const std::string& group) {
  return reading(file, [&] {
    const OpenResults results(file);
    if (!h5_path_exists(results.file.get(), group)) return std::vector<std::string>{};
    H5Handle members{SB_H5_CHECK(H5Gopen2(results.file.get(), group.c_str(), H5P_DEFAULT)), H5Gclose};
    return h5_member_names(members.get());
  });
}

Attributes read_attributes(const path& file, const std::string& object) {
  return reading(file, [&] {
    const OpenResults results(file);
    return h5_read_attributes(open_object(results, object).get());
  });
}

AttrValue read_attribute(const path& file, const std::string& object, const std::string& name) {
  return reading(file, [&] {
    const OpenResults results(file);
    const H5Handle handle = open_object(results, object);
    if (!h5_has_attribute(handle.get(), name)) {
      throw UserError(fmt::format("{} in {} has no attribute '{}'", object, file.string(), name));
    }
    return h5_read_attribute(handle.get(), name);
  });
}

std::string read_string_attribute(const path& file, const std::string& object,
                                  const std::string& name) {
  return reading(file, [&] {
    const AttrValue value = read_attribute(file, object, name);
    if (const auto* text = std::get_if<std::string>(&value)) return *text;
    throw UserError(fmt::format("attribute '{}' of {} in {} is not a string", name,
                                object, file.string()));
  });
}

double read_number_attribute(const path& file, const std::string& object,
                             const std::string& name) {
  return reading(file, [&] {
    const AttrValue value = read_attribute(file, object, name);
    if (const auto* integer = std::get_if<std::int64_t>(&value)) return static_cast<double>(*integer);
    if (const auto* real = std::get_if<double>(&value)) return *real;
    throw UserError(fmt::format("attribute '{}' of {} in {} is not a number", name,
                                object, file.string()));
  });
}

bool has_object(const path& file, const std::string& object) {
  return reading(file, [&] {
    const OpenResults results(file);
    return object == "/" || h5_path_exists(results.file.get(), object);
  });
}

std::vector<std::string> list_fields(const path& file, const std::string& table) {
  return reading(file, [&] {
    const OpenResults results(file);
    return field_names(open_table(results, table));
  });
}

std::int64_t count_rows(const path& file, const std::string& table) {
  return reading(file, [&] {
    const OpenResults results(file);
    return open_table(results, table).rows;
  });
}

std::vector<double> read_column(const path& file, const std::string& table,
                                const std::string& field) {
  return reading(file, [&] {
    return numeric_column(OpenResults(file), table, field);
  });
}

std::vector<std::string> read_string_column(const path& file, const std::string& table,
                                            const std::string& field) {
  return reading(file, [&] {
    return fixed_string_column(OpenResults(file), table, field);
  });
}

std::string summarize_results(const path& file) {
  return reading(file, [&] {
    const OpenResults results(file);
    const Attributes root = h5_read_attributes(results.file.get());
    const std::vector<std::string> ids = run_ids(results);
    std::string text = fmt::format("{}: scalebench result file, schema version {}, written by {}\n",
                                   file.string(), text_of(root, "schema_version"),
                                   text_of(root, "generator"));
    text += fmt::format("{} run{}\n", ids.size(), ids.size() == 1 ? "" : "s");
    for (const std::string& id : ids) {
      text += '\n';
      text += summarize_run(results, id);
    }
    return text;
  });
}

}  // namespace sb::io
