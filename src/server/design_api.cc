#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "base/json_writer.h"
#include "io/export.h"
#include "lab/worksheet.h"
#include "plan/validate.h"
#include "request/engine_requests.h"
#include "server/command_api.h"
#include "server/endpoints.h"
#include "server/engine_params.h"

namespace infralens::server {

namespace {

constexpr int kMaxApiTop = 100;  // layouts listed per answer

struct ExportFile {
  const char* extension;
  const char* content_type;
};
ExportFile FileOf(io::ExportFormat f) {
  switch (f) {
    case io::ExportFormat::kMegatron:
      return {".sh", "text/x-shellscript; charset=utf-8"};
    case io::ExportFormat::kDeepSpeed:
      return {".json", "application/json"};
    case io::ExportFormat::kTorchtitan:
      return {".toml", "application/toml"};
    case io::ExportFormat::kPytorchCsv:
      return {".csv", "text/csv; charset=utf-8"};
  }
  return {".txt", "text/plain; charset=utf-8"};
}

ApiResult HandleExport(ApiCall& call) {
  ParamReader& p = call.params;
  // The job as /api/plan reads it (the declared options of `plan`), gpus within the server's
  // bound.
  request::RequestFlags rf;
  ParamSink sink(
      p, {{"gpus", 1,
           static_cast<double>(std::min<int64_t>(call.limits.max_plan_gpus, cluster::kMaxGpus))}});
  rf.Register(sink, /*layout=*/true, /*exports=*/false);
  rf.SetFilesAllowed(false);
  const std::string format_name = ShortText(p, "format", "");
  const bool download = p.Flag("download");
  if (p.error()) return ReaderError(p);
  if (!p.Given("format")) {
    return ParamFailure("format",
                        fmt::format("format: required, one of {}", io::ExportFormatNames()));
  }
  auto format = io::ParseExportFormat(format_name);
  if (!format.ok()) {
    return ParamFailure("format", fmt::format("format '{}': expected one of {}", format_name,
                                              io::ExportFormatNames()));
  }
  auto c = ChooseRequestLayout(call, rf, /*want_best=*/false);
  if (auto* e = std::get_if<ApiError>(&c)) return *e;
  const request::LayoutChoice& choice = std::get<request::LayoutChoice>(c);
  auto cfg = io::ExportPlan(*format, choice.request, choice.chosen.layout);
  if (!cfg.ok()) {
    // The exporters speak in the CLI's flag ("--export pytorch-csv: ..."); here it is `format`.
    const std::string_view message = cfg.status().message();
    constexpr std::string_view kFlag = "--export ";
    if (message.rfind(kFlag, 0) == 0)
      return ParamFailure("format", fmt::format("format {}", message.substr(kFlag.size())));
    return EngineError(call, cfg.status());
  }
  const ExportFile file = FileOf(*format);
  const plan::Layout& lay = choice.chosen.layout;
  const std::string file_name = fmt::format("{}_{}_tp{}_pp{}_dp{}{}", io::ExportFormatName(*format),
                                            choice.request.model.name, lay.parallel.tp,
                                            lay.parallel.pp, lay.parallel.dp, file.extension);
  if (download) {
    HttpResponse r;
    r.content_type = file.content_type;
    r.body = std::move(cfg->text);
    r.headers.emplace_back("Content-Disposition",
                           fmt::format("attachment; filename=\"{}\"", file_name));
    return r;
  }
  JsonWriter w;
  w.BeginObject()
      .Field("format", io::ExportFormatName(*format))
      .Field("layout", lay.ToString())
      .Field("planner_best", !choice.given)
      .Field("file_name", file_name)
      .Field("content_type", file.content_type)
      .Field("content", cfg->text)
      .Key("notes")
      .BeginArray();
  for (const std::string& n : cfg->notes) w.String(n);
  w.EndArray().EndObject();
  return JsonResponse(w.str());
}

}  // namespace

void RegisterDesignEndpoints(Api& api) {
  // Every plan answer carries the spread of the published runs (plan::BuiltinSpread): computed
  // here, once per process, so that no request pays for it inside its time limit.
  (void)plan::BuiltinSpread();
  RegisterCommand(api, request::MemoryCommand(), {.path = "/api/memory", .light = true});
  RegisterCommand(api, request::PlanCommand(),
                  {.path = "/api/plan", .bounds = {{"top", 1, kMaxApiTop}}, .search = true});
  RegisterCommand(api, request::WorksheetCommand(),
                  {.path = "/api/worksheet", .formats = {"json", "markdown"}, .search = true});
  RegisterCommand(api, request::WorksheetCheckCommand(),
                  {.path = "/api/worksheet/check",
                   .formats = {"json", "markdown"},
                   .search = true,
                   .body = true});
  api.Register(
      {"/api/export",
       {"GET", "POST"},
       "the layout the degrees give, or the planner's best, as a Megatron-LM, DeepSpeed or "
       "torchtitan configuration or its schedule as a PyTorch CSV (infralens plan --export)",
       JoinParams(
           {PlanRequestParams(),
            {{"format", {}, "required: " + io::ExportFormatNames(), ""},
             {"download", {}, "1: the file itself (Content-Disposition: attachment)", "0"}}}),
       false,
       HandleExport});
}

}  // namespace infralens::server
