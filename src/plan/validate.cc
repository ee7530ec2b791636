#include "plan/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <map>

#include "base/csv.h"
#include "base/strings.h"
#include "cluster/cluster.h"
#include "hw/gpu.h"

namespace infralens::plan {

StatusOr<std::vector<PublishedRun>> ReadPublishedRuns(std::string_view text) {
  ASSIGN_OR_RETURN(auto rows, ParseCsv(text));
  if (rows.empty()) return InvalidArgument("the CSV is empty; expected a header row");
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].size(); ++i) col[ToLower(Trim(rows[0][i]))] = i;
  const char* required[] = {"model", "layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len", "gpu",
                            "cluster", "num_gpus", "tp", "pp", "dp", "global_batch", "measured_step_time_s"};
  for (const char* r : required) {
    if (!col.count(r)) return InvalidArgument(fmt::format("header: missing column '{}'", r));
  }
  std::vector<PublishedRun> out;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    PublishedRun run;
    run.line = static_cast<int>(i + 1);
    auto cell = [&](const char* name) -> std::string {
      auto it = col.find(name);
      if (it == col.end() || it->second >= row.size()) return "";
      return std::string(Trim(row[it->second]));
    };
    auto integer = [&](const char* name, int64_t fallback, bool required) -> StatusOr<int64_t> {
      std::string s = cell(name);
      if (s.empty()) {
        if (required) return InvalidArgument(fmt::format("line {}: column {} is empty", run.line, name));
        return fallback;
      }
      auto v = ParseInt(s);
      if (!v || *v < 0 || *v > (int64_t{1} << 40)) {
        return InvalidArgument(fmt::format("line {}: {} '{}' is not a whole number >= 0", run.line, name, s));
      }
      return *v;
    };
    auto number = [&](const char* name) -> StatusOr<double> {
      std::string s = cell(name);
      if (s.empty()) return 0.0;
      auto v = ParseDouble(s);
      if (!v || *v < 0) return InvalidArgument(fmt::format("line {}: {} '{}' is not a number >= 0", run.line, name, s));
      return *v;
    };
    run.source = cell("source");
    run.model_name = cell("model");
    run.gpu = cell("gpu");
    run.cluster = cell("cluster");
    run.recompute = cell("recompute");
    run.precision = cell("precision").empty() ? "bf16" : cell("precision");
    run.notes = cell("notes");
    model::Model& m = run.model;
    m.name = run.model_name;
    m.source = run.source;
    ASSIGN_OR_RETURN(m.num_layers, integer("layers", 0, true));
    ASSIGN_OR_RETURN(m.hidden, integer("hidden", 0, true));
    ASSIGN_OR_RETURN(m.num_heads, integer("heads", 0, true));
    ASSIGN_OR_RETURN(m.num_kv_heads, integer("kv_heads", m.num_heads, false));
    ASSIGN_OR_RETURN(m.ffn_hidden, integer("ffn_hidden", 0, true));
    ASSIGN_OR_RETURN(m.vocab, integer("vocab", 0, true));
    ASSIGN_OR_RETURN(m.seq_len, integer("seq_len", 0, true));
    if (m.num_heads > 0) m.head_dim = m.hidden / m.num_heads;
    const std::string mlp = ToLower(cell("mlp"));
    if (mlp == "swiglu") {
      m.gated_mlp = true;
    } else if (mlp == "gelu" || mlp.empty()) {
      // GPT-style: LayerNorm, biases, learned positions (Brown et al. 2020; Megatron GPT).
      m.layernorm = true;
      m.qkv_bias = m.out_bias = m.mlp_bias = true;
      m.learned_positions = m.seq_len;
    } else {
      return InvalidArgument(fmt::format("line {}: mlp '{}' must be gelu or swiglu", run.line, mlp));
    }
    Status valid = model::Validate(m);
    if (!valid.ok()) return InvalidArgument(fmt::format("line {}: {}", run.line, valid.message()));
    ASSIGN_OR_RETURN(run.num_gpus, integer("num_gpus", 0, true));
    ASSIGN_OR_RETURN(int64_t tp, integer("tp", 1, true));
    ASSIGN_OR_RETURN(int64_t pp, integer("pp", 1, true));
    ASSIGN_OR_RETURN(int64_t dp, integer("dp", 1, true));
    ASSIGN_OR_RETURN(int64_t cp, integer("cp", 1, false));
    ASSIGN_OR_RETURN(int64_t ep, integer("ep", 1, false));
    ASSIGN_OR_RETURN(int64_t vp, integer("vp", 0, false));
    ASSIGN_OR_RETURN(int64_t zero, integer("zero", 0, false));
    for (auto [name, v] : {std::pair{"tp", tp}, {"pp", pp}, {"dp", dp}, {"cp", cp}, {"ep", ep}}) {
      if (v < 1 || v > 65536) return InvalidArgument(fmt::format("line {}: {} {} must be 1..65536", run.line, name, v));
    }
    if (zero > 3) return InvalidArgument(fmt::format("line {}: zero {} must be 0..3", run.line, zero));
    run.tp = static_cast<int>(tp), run.pp = static_cast<int>(pp), run.dp = static_cast<int>(dp);
    run.cp = static_cast<int>(cp), run.ep = static_cast<int>(ep), run.vp = static_cast<int>(std::min<int64_t>(vp, 64));
    run.zero = static_cast<int>(zero);
    if (int64_t{run.tp} * run.pp * run.dp * run.cp != run.num_gpus) {
      return InvalidArgument(fmt::format("line {}: tp x pp x dp x cp = {} but num_gpus = {}", run.line,
                                         int64_t{run.tp} * run.pp * run.dp * run.cp, run.num_gpus));
    }
    ASSIGN_OR_RETURN(run.global_batch, integer("global_batch", 0, true));
    ASSIGN_OR_RETURN(run.micro_batch, integer("micro_batch", 0, false));
    ASSIGN_OR_RETURN(run.measured_step_time_s, number("measured_step_time_s"));
    if (run.measured_step_time_s <= 0) {
      return InvalidArgument(fmt::format("line {}: measured_step_time_s must be > 0", run.line));
    }
    ASSIGN_OR_RETURN(run.measured_tflops_per_gpu, number("measured_tflops_per_gpu"));
    ASSIGN_OR_RETURN(run.measured_mfu, number("measured_mfu"));
    out.push_back(std::move(run));
  }
  return out;
}

int PublicationYear(std::string_view source) {
  // A four-digit year (1990-2099), or a conference tag such as "SC21" / "NeurIPS'22".
  for (size_t i = 0; i + 4 <= source.size(); ++i) {
    if ((source.substr(i, 2) == "19" || source.substr(i, 2) == "20") && std::isdigit(static_cast<unsigned char>(source[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(source[i + 3])) &&
        (i + 4 == source.size() || !std::isdigit(static_cast<unsigned char>(source[i + 4]))) &&
        (i == 0 || !std::isdigit(static_cast<unsigned char>(source[i - 1])))) {
      int y = (source[i] - '0') * 1000 + (source[i + 1] - '0') * 100 + (source[i + 2] - '0') * 10 + (source[i + 3] - '0');
      if (y >= 1990 && y <= 2099) return y;
    }
  }
  for (std::string_view tag : {"SC", "NeurIPS", "ICML", "ICLR", "MLSys", "OSDI", "SOSP", "ATC", "PPoPP"}) {
    size_t pos = source.find(tag);
    if (pos == std::string_view::npos) continue;
    size_t i = pos + tag.size();
    if (i < source.size() && source[i] == '\'') ++i;
    if (i + 2 <= source.size() && std::isdigit(static_cast<unsigned char>(source[i])) &&
        std::isdigit(static_cast<unsigned char>(source[i + 1]))) {
      return 2000 + (source[i] - '0') * 10 + (source[i + 1] - '0');
    }
  }
  return 0;
}

namespace {

StatusOr<PlanRequest> RequestFor(const PublishedRun& run) {
  PlanRequest req;
  req.model = run.model;
  ASSIGN_OR_RETURN(req.gpu, hw::FindGpu(run.gpu));
  ASSIGN_OR_RETURN(req.cluster, cluster::FindClusterPreset(run.cluster));
  const int gpn = req.cluster.node.gpus_per_node;
  if (run.num_gpus % gpn != 0) {
    return InvalidArgument(fmt::format("num_gpus {} is not whole {}-GPU nodes", run.num_gpus, gpn));
  }
  req.cluster.num_nodes = static_cast<int>(run.num_gpus / gpn);
  req.global_batch = run.global_batch;
  req.seq_len = run.model.seq_len;
  ASSIGN_OR_RETURN(req.precision, ParsePrecision(run.precision));
  // What the framework ran then: before 2023, Megatron-LM materialised attention and reduced
  // gradients after the backward (see PlanRequest).
  const int year = PublicationYear(run.source);
  if (year > 0 && year < 2023) {
    req.fused_attention = false;
    req.overlap_grad_reduce = false;
  }
  return req;
}

}  // namespace

Validation ValidateRuns(const std::vector<PublishedRun>& runs) {
  Validation v;
  std::vector<double> errors;
  for (const PublishedRun& run : runs) {
    ValidationRow row;
    row.run = run;
    auto req = RequestFor(run);
    if (!req.ok()) {
      row.status = req.status();
      v.rows.push_back(std::move(row));
      continue;
    }
    // Candidates for what the source leaves open.
    std::vector<int64_t> mbs = run.micro_batch > 0 ? std::vector<int64_t>{run.micro_batch}
                                                   : std::vector<int64_t>{1, 2, 4, 8};
    std::vector<int> vps;
    if (run.vp > 0) {
      vps = {run.vp};
    } else {
      vps = {1};
      for (int vp = 2; vp <= 8 && run.pp > 1; ++vp) {
        if (run.model.num_layers % (int64_t{run.pp} * vp) == 0) vps.push_back(vp);
      }
    }
    std::vector<std::pair<model::Recompute, bool>> recomputes;  // (mode, sequence parallel)
    const std::string rc = ToLower(run.recompute);
    if (rc == "full") {
      recomputes = {{model::Recompute::kFull, false}};
    } else if (rc == "selective+sp") {
      recomputes = {{model::Recompute::kSelective, true}};
    } else if (rc == "selective") {
      recomputes = {{model::Recompute::kSelective, false}};
    } else if (rc == "none") {
      recomputes = {{model::Recompute::kNone, false}};
    } else {
      recomputes = {{model::Recompute::kSelective, run.tp > 1}, {model::Recompute::kFull, false}};
    }
    bool have = false;
    Status last = FailedPrecondition("no candidate layout fits in memory");
    for (int64_t mb : mbs) {
      for (int vp : vps) {
        for (auto [recompute, sp] : recomputes) {
          Layout lay;
          lay.parallel.tp = run.tp;
          lay.parallel.pp = run.pp;
          lay.parallel.dp = run.dp;
          lay.parallel.cp = run.cp;
          lay.parallel.ep = run.ep;
          lay.parallel.vpp = vp;
          lay.parallel.zero_stage = run.zero;
          lay.parallel.sequence_parallel = sp;
          lay.recompute = recompute;
          lay.micro_batch = mb;
          lay.schedule = vp > 1 ? schedule::ScheduleKind::kInterleaved1F1B : schedule::ScheduleKind::k1F1B;
          auto r = Evaluate(*req, lay);
          if (!r.ok()) {
            last = r.status();
            continue;
          }
          if (!r->memory.fits) continue;
          if (!have || r->time.step_s < row.predicted.time.step_s) {
            row.predicted = std::move(r).value();
            have = true;
          }
        }
      }
    }
    if (!have) {
      row.status = last;
    } else {
      row.predicted_step_time_s = row.predicted.time.step_s;
      row.error = (row.predicted_step_time_s - run.measured_step_time_s) / run.measured_step_time_s;
      row.predicted_tflops_per_gpu =
          run.measured_tflops_per_gpu * run.measured_step_time_s / row.predicted_step_time_s;
      errors.push_back(std::fabs(row.error));
    }
    v.rows.push_back(std::move(row));
  }
  v.predicted = static_cast<int>(errors.size());
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    const size_t n = errors.size();
    v.median_abs_error = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  }
  return v;
}

}  // namespace infralens::plan
