// Calibration in the web API (issue 10): POST /api/trace/calibrate fits the planner's efficiency
// constants from uploaded traces recorded with record_shapes=True (`infralens trace calibrate
// --format json`, plus the efficiency file's text), GET /api/trace/calibrate/sample writes a
// trace with shapes whose kernels follow known curves (`infralens trace synth --record-shapes`),
// the measurement page's one-click example.
#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/json_writer.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/efficiency.h"
#include "request/cluster_flags.h"
#include "request/request_flags.h"
#include "request/trace_flags.h"
#include "server/engine_params.h"
#include "server/multipart.h"
#include "server/trace_api.h"
#include "trace/calibrate.h"
#include "trace/calibrate_synth.h"

namespace infralens::server {

namespace {

ApiResult HandleCalibrate(ApiCall& call) {
  ParamReader& p = call.params;
  trace::CalibrationOptions options;
  std::string gpu = ShortText(p, "gpu", ""), cluster_name = ShortText(p, "cluster", "");
  options.min_samples = p.Int("min_samples", options.min_samples, 1, 1'000'000);
  if (p.error()) return ReaderError(p);
  if (call.body.empty()) {
    return ParamFailure("body",
                        "the request body is empty; POST Kineto trace files recorded with "
                        "record_shapes=True (.json or .json.gz) as multipart/form-data, one part "
                        "per file, with the GPU as a field (curl -F gpu=H100-SXM "
                        "-F trace=@rank0.json URL) or in the query (?gpu=H100-SXM)");
  }
  std::map<std::string, std::string> fields;
  auto uploaded = UploadedTraces(call, "(?gpu=H100-SXM&cluster=dgx-h100&min_samples=8)",
                                 {"gpu", "cluster"}, &fields);
  if (auto* e = std::get_if<ApiError>(&uploaded)) return *e;
  if (auto it = fields.find("gpu"); it != fields.end() && gpu.empty()) gpu = it->second;
  if (auto it = fields.find("cluster"); it != fields.end() && cluster_name.empty()) {
    cluster_name = it->second;
  }
  // Each named choice is checked before the traces are read. Without a GPU the traces'
  // deviceProperties name it; without a cluster the default counts only for its own GPU
  // (request::ResolveCalibrationTarget, as `trace calibrate` decides). A request reads no file,
  // so a cluster is a preset.
  std::optional<hw::Gpu> named_gpu;
  if (!gpu.empty()) {
    auto found = hw::FindGpu(gpu);
    if (!found.ok()) return FromStatus(found.status(), "gpu");
    named_gpu = *found;
  }
  const bool cluster_named = !cluster_name.empty();
  if (!cluster_named) cluster_name = request::ClusterFlags{}.cluster;  // the CLI's default
  const StatusOr<cluster::Cluster> cl = cluster::FindClusterPreset(cluster_name);
  if (cluster_named && !cl.ok()) return FromStatus(cl.status(), "cluster");

  const std::vector<trace::TraceBytes>& inputs = std::get<0>(uploaded);
  auto read = LoadUploadedTraces(call, inputs, "infralens trace calibrate");
  if (auto* e = std::get_if<ApiError>(&read)) return *e;
  const trace::LoadedTraces& loaded = std::get<trace::LoadedTraces>(read);
  if (loaded.traces.empty()) {
    const Status& first = loaded.errors.front().status;
    return ParamFailure("body", loaded.errors.size() == 1
                                    ? std::string(first.message())
                                    : fmt::format("none of the {} files could be used; first: {}",
                                                  loaded.errors.size(), first.message()));
  }
  auto target =
      request::ResolveCalibrationTarget(loaded.traces, named_gpu, cl, cluster_named, cluster_name,
                                        "the gpu field", "the cluster field");
  if (!target.ok()) {
    // Traces without shapes are the body's fault; a GPU they cannot name, the gpu field's.
    return FromStatus(target.status(),
                      target.status().code() == StatusCode::kInvalidArgument ? "gpu" : "body");
  }
  options.gpu = target->gpu;
  if (target->cluster) {
    options.cluster = &*target->cluster;
  } else {
    options.no_cluster_note = target->no_cluster_note;
  }
  auto cal = trace::Calibrate(loaded.traces, options);
  if (call.Expired()) return call.TimeLimitError();
  if (!cal.ok()) return FromStatus(cal.status(), "body");
  cal->notes.insert(cal->notes.begin(), target->notes.begin(), target->notes.end());

  JsonWriter w(0);
  w.BeginObject();
  w.Key("calibration");
  trace::WriteCalibrationJson(w, *cal);
  // The efficiency file itself: what the page downloads and sends back to /api/plan as
  // `efficiency` (the CLI's --efficiency FILE).
  w.Field("efficiency_csv", trace::CalibrationCsv(*cal));
  w.Key("errors").BeginArray();
  for (const trace::FileError& f : loaded.errors) {
    w.BeginObject().Field("file", f.path).Field("message", f.status.message()).EndObject();
  }
  w.EndArray();
  w.EndObject();
  return JsonResponse(w.str());
}

ApiResult HandleSample(ApiCall& call) {
  ParamReader& p = call.params;
  std::string gpu = ShortText(p, "gpu", ""), model = ShortText(p, "model", "");
  if (gpu.empty()) gpu = "H100-SXM";
  if (model.empty()) model = "llama3-8b";
  trace::ShapesSynthOptions o;
  o.tp = p.Int("tp", 1, 1, 64);
  const std::string efficiency = ReadEfficiencyText(p);
  if (p.error()) return ReaderError(p);
  auto g = hw::FindGpu(gpu);
  if (!g.ok()) return FromStatus(g.status(), "gpu");
  o.gpu = *g;
  auto m = model::FindPreset(model);
  if (!m.ok()) return FromStatus(m.status(), "model");
  o.model = *m;
  auto table = request::EfficiencyFromText(efficiency, request::kEfficiencyTextOrigin);
  if (!table.ok()) return FromStatus(table.status(), "efficiency");
  o.curves =
      (*table ? **table : plan::EfficiencyTable::Builtin()).For(o.gpu, plan::Precision::kBf16);
  if (Status st = trace::CheckShapesSynthOptions(o); !st.ok()) return FromStatus(st, "tp");
  auto json = trace::ShapesTraceJson(o);
  if (!json.ok()) return FromStatus(json.status());
  if (call.Expired()) return call.TimeLimitError();
  HttpResponse res;
  res.body =
      WriteMultipart({{"trace", "rank0.json", "application/json", *json}}, &res.content_type);
  return res;
}

}  // namespace

void RegisterCalibrateEndpoints(Api& api) {
  RegisterUpload(
      api, "/api/trace/calibrate",
      "the planner's efficiency constants fitted from uploaded PyTorch profiler traces recorded "
      "with record_shapes=True (infralens trace calibrate --format json), with the efficiency "
      "file as efficiency_csv (send it to /api/plan as efficiency). Body: multipart/form-data, one "
      "part per file (.json or .json.gz) and optionally gpu and cluster fields, or one file as "
      "the whole body. Without gpu, the traces' deviceProperties name it; the cluster (a preset) "
      "gives the link rates of the scale_up_link and scale_out_link rows",
      ParamSpecsOf([](request::FlagSink& f) {
        std::string gpu;
        int min_samples = trace::CalibrationOptions().min_samples;
        request::RegisterCalibrateFlags(f, &gpu, &min_samples);
        request::ClusterFlags cluster;
        cluster.RegisterCluster(f);
      }),
      HandleCalibrate);

  std::vector<ParamSpec> sample = ParamSpecsOf([](request::FlagSink& f) {
    request::ShapesSynthFlags defaults;
    defaults.Register(f);
  });
  sample = PickParams(sample, {"gpu", "model", "tp"});
  // Not given: H100-SXM and llama3-8b, as the CLI's.
  FindParam(sample, "model").help = "a model preset (infralens presets --kind models)";
  api.Register({"/api/trace/calibrate/sample",
                {"GET"},
                "a one-rank Kineto trace with shapes whose kernels follow the efficiency curves "
                "(infralens trace synth --record-shapes): multipart/form-data with one file, "
                "ready to POST to /api/trace/calibrate",
                JoinParams({sample, EfficiencyParams()}),
                false,
                HandleSample});
}

}  // namespace infralens::server
