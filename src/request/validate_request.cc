// `infralens validate`: the step-time model against published training runs, as a table or JSON.
#include <fmt/format.h>

#include "base/json_writer.h"
#include "base/read_file.h"
#include "base/table.h"
#include "plan/validate.h"
#include "request/engine_requests.h"
#include "request/request_flags.h"

namespace infralens::request {

namespace {

// The largest CSV of published runs read (the built-in one is about 20 KB).
constexpr size_t kMaxPublishedBytes = 16 << 20;

struct ValidateQuery {
  std::string published;  // --published FILE.csv; "" = the built-in copy
  std::string efficiency_path;
};

struct ValidateResult {
  std::string published;  // the file, or what the built-in copy is
  plan::Validation v;
};

std::string ValidateJson(const ValidateResult& result) {
  const plan::Validation& v = result.v;
  JsonWriter w;
  w.BeginObject();
  w.Field("published", result.published);
  w.Key("rows").BeginArray();
  for (const auto& r : v.rows) {
    w.BeginObject();
    w.Field("line", r.run.line).Field("source", r.run.source).Field("model", r.run.model_name);
    w.Field("gpus", r.run.num_gpus);
    w.Field("measured_step_time_s", r.run.measured_step_time_s);
    if (!r.status.ok()) {
      w.Field("error_message", r.status.message());
    } else {
      w.Field("layout", r.predicted.layout.ToString());
      w.Field("predicted_step_time_s", r.predicted_step_time_s);
      w.Field("predicted_tflops_per_gpu", r.predicted_tflops_per_gpu);
      if (r.run.measured_tflops_per_gpu > 0)
        w.Field("measured_tflops_per_gpu", r.run.measured_tflops_per_gpu);
      w.Field("predicted_mfu", r.predicted.mfu);
      w.Field("error", r.error);
      w.Field("fitting_candidates", r.fitting_candidates);
      if (r.fitting_candidates > 0) {
        w.Field("slowest_fit_step_time_s", r.slowest_fit_step_time_s);
        w.Field("slowest_fit_error", r.slowest_fit_error);
      }
      if (!r.memory_miss.empty()) w.Field("memory_miss", r.memory_miss);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Field("predicted_rows", v.predicted);
  w.Field("median_abs_error", v.median_abs_error);
  w.Field("median_error", v.median_error);
  w.Field("memory_misses", v.memory_misses);
  w.Field("within_fitting_range", v.within_fitting_range);
  w.Field("slower_than_every_fit", v.slower_than_every_fit);
  for (auto [key, list] : {std::pair{"sources", &v.sources}, {"frameworks", &v.frameworks}}) {
    w.Key(key).BeginArray();
    for (const auto& s : *list) {
      w.BeginObject();
      w.Field(key == std::string_view("sources") ? "source" : "framework", s.source);
      w.Field("rows", s.rows).Field("predicted", s.predicted);
      w.Field("median_abs_error", s.median_abs_error).Field("median_error", s.median_error);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return w.str();
}

std::string ValidateText(const plan::Validation& v, bool markdown) {
  std::string data;
  TextTable t({"model", "GPUs", "layout (open cells chosen)", "measured s", "predicted s", "error",
               "slowest fit", "TFLOP/s meas.", "TFLOP/s pred."});
  t.SetAlign(2, TextTable::Align::kLeft);
  for (const auto& r : v.rows) {
    if (!r.status.ok()) {
      t.AddRow({r.run.model_name, std::to_string(r.run.num_gpus), r.status.message(),
                fmt::format("{:.3f}", r.run.measured_step_time_s), "-", "-", "-", "-", "-"});
      continue;
    }
    t.AddRow(
        {r.run.model_name, std::to_string(r.run.num_gpus),
         r.predicted.layout.ToString() + (r.memory_miss.empty() ? "" : " (memory-model miss)"),
         fmt::format("{:.3f}", r.run.measured_step_time_s),
         fmt::format("{:.3f}", r.predicted_step_time_s), fmt::format("{:+.1f}%", 100 * r.error),
         r.fitting_candidates > 0 ? fmt::format("{:+.1f}%", 100 * r.slowest_fit_error) : "-",
         r.run.measured_tflops_per_gpu > 0 ? fmt::format("{:.1f}", r.run.measured_tflops_per_gpu)
                                           : "-",
         fmt::format("{:.1f}", r.predicted_tflops_per_gpu)});
  }
  data = markdown ? t.RenderMarkdown() : t.Render();
  for (const auto& r : v.rows) {
    if (!r.memory_miss.empty())
      data += fmt::format("line {} ({}): {}\n", r.run.line, r.run.model_name, r.memory_miss);
  }
  for (auto [head, list] :
       {std::pair{"source", &v.sources}, std::pair{"framework", &v.frameworks}}) {
    TextTable st({head, "rows", "predicted", "median |error|", "median error"});
    st.SetAlign(0, TextTable::Align::kLeft);
    for (const auto& s : *list) {
      st.AddRow({s.source, std::to_string(s.rows), std::to_string(s.predicted),
                 s.predicted > 0 ? fmt::format("{:.1f}%", 100 * s.median_abs_error) : "-",
                 s.predicted > 0 ? fmt::format("{:+.1f}%", 100 * s.median_error) : "-"});
    }
    data += "\n" + (markdown ? st.RenderMarkdown() : st.Render());
  }
  data += fmt::format(
      "\nmedian absolute error: {:.1f}% over {} of {} rows, median error {:+.1f}% ({} memory-model "
      "misses) (error = (predicted - measured) / measured; "
      "TFLOP/s in each source's own FLOP count; where it published none, the model's FLOPs "
      "without recompute)\n",
      100 * v.median_abs_error, v.predicted, v.rows.size(), 100 * v.median_error, v.memory_misses);
  data += fmt::format(
      "open cells (micro-batch, interleaving, recompute, ZeRO stage) take the fastest candidate "
      "that fits; "
      "\"slowest fit\" is the error of the slowest: the measured step lies between them on {} "
      "rows, and is slower than every candidate that fits on {}\n",
      v.within_fitting_range, v.slower_than_every_fit);
  return data;
}

}  // namespace

const Command& ValidateCommand() {
  static const Command kCommand = MakeCommand<ValidateQuery, ValidateResult>(
      {.name = "validate",
       .summary = "predict published training runs and report the step-time error",
       .usage = "infralens validate [--published FILE.csv] [--json]",
       .examples = {"infralens validate", "infralens validate --json",
                    "infralens validate --published runs.csv --format markdown"},
       .formats = {"table", "markdown", "json"}},
      [](ValidateQuery& q, FlagSink& flags) {
        flags.String("--published", &q.published,
                     "CSV of published runs (columns as in data/published/README.md), relative to "
                     "the current folder; default: the copy built into infralens");
        RegisterEfficiency(flags, &q.efficiency_path);
      },
      [](const ValidateQuery& q, const RunContext& ctx) -> StatusOr<ValidateResult> {
        ValidateResult r;
        std::string text;
        if (q.published.empty()) {
          r.published = "(built in: data/published/calibration.csv)";
          text = std::string(plan::BundledPublishedRuns());
        } else {
          r.published = q.published;
          ASSIGN_OR_RETURN(text, ctx.ReadInput(q.published, "published", kMaxPublishedBytes));
        }
        auto runs = plan::ReadPublishedRuns(text);
        // A malformed row is a failure of the file (exit 1), naming the row and column.
        if (!runs.ok()) {
          return FailedPrecondition(fmt::format("{}: {}", r.published, runs.status().message()));
        }
        ASSIGN_OR_RETURN(auto efficiency, LoadEfficiency(q.efficiency_path));
        r.v = plan::ValidateRuns(*runs, efficiency);
        return r;
      },
      [](const ValidateResult& r, const ValidateQuery&,
         const RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.format == "json") return ValidateJson(r);
        return ValidateText(r.v, ctx.format == "markdown");
      });
  return kCommand;
}

}  // namespace infralens::request
