#include "plan/framework.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "base/csv.h"
#include "base/enum_names.h"
#include "base/strings.h"

namespace infralens::plan {

namespace {

constexpr std::array<Framework, 6> kNamed = {Framework::kMegatronLm, Framework::kMegatronDeepSpeed,
                                             Framework::kDeepSpeed,  Framework::kTorchtitan,
                                             Framework::kNemo,       Framework::kMegaScale};

constexpr const char* kKeys[] = {
    "attention",         "overlap_grad_reduce",   "overlap_grad_reduce_zero3",
    "tp_overlap",        "grad_reduce_fp32_bf16", "grad_reduce_fp32_fp8",
    "sequence_parallel", "elementwise",           "schedules",
    "p2p_blocking",      "dp_bucket_params",      "fsdp_unit",
    "fp8_recipe",        "ep_dispatcher",         "ep_overlap",
    "pipeline_chunks",   "pipeline_microbatches", "tp_overlap_backward",
    "fsdp_copies",       "tp_overlap_rs_sms",     "tp_overlap_bulk_sms",
    "sp_backward",       "zero_stages",           "zero_stages_pipelined",
    "fsdp_with_pp",      "fsdp_max_live_params",  "cross_entropy",
    "sp_sequence_dim",   "tp_overlap_rs_splits",  "tp_overlap_rs_reduction",
    "fp8_param_gather",  "fused_projections",     "cp_exchange",
    "cp_kv_heads",       "recompute_modules_list"};

}  // namespace

constexpr EnumName<Framework> kFrameworkNames[] = {
    {Framework::kMegatronLm, "megatron-lm"},
    {Framework::kMegatronDeepSpeed, "megatron-deepspeed"},
    {Framework::kDeepSpeed, "deepspeed"},
    {Framework::kTorchtitan, "torchtitan"},
    {Framework::kNemo, "nemo"},
    {Framework::kMegaScale, "megascale"},
    {Framework::kOther, "other"}};

StatusOr<Framework> ParseFramework(std::string_view name) {
  const std::string n = ToLower(name);
  if (auto f = ValueIn(kFrameworkNames, n)) return *f;
  return InvalidArgument(
      fmt::format("'{}' is not one of megatron-lm, megatron-deepspeed, deepspeed, torchtitan, "
                  "nemo, megascale, other",
                  Excerpt(name)));
}

const char* FrameworkName(Framework f) { return NameIn(kFrameworkNames, f, "other"); }

std::string_view BundledFrameworkCsv(Framework f) {
  switch (f) {
    case Framework::kMegatronLm:
      return BundledFrameworkMegatronLm();
    case Framework::kMegatronDeepSpeed:
      return BundledFrameworkMegatronDeepSpeed();
    case Framework::kDeepSpeed:
      return BundledFrameworkDeepSpeed();
    case Framework::kTorchtitan:
      return BundledFrameworkTorchtitan();
    case Framework::kNemo:
      return BundledFrameworkNemo();
    case Framework::kMegaScale:
      return BundledFrameworkMegaScale();
    case Framework::kOther:
      return {};
  }
  return {};
}

StatusOr<FrameworkData> ParseFrameworkData(Framework f, std::string_view csv,
                                           std::string_view origin) {
  ASSIGN_OR_RETURN(auto rows, ParseCsv(BlankCommentLines(csv), 10'000));
  FrameworkData d;
  d.framework = f;
  std::map<std::string, std::pair<std::string, int>> values;  // key -> (value, line)
  bool header = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (row.size() == 1 && Trim(row[0]).empty()) continue;  // a blank or comment line
    const int line = static_cast<int>(i + 1);
    if (header) {
      if (row.size() != 3 || Trim(row[0]) != "key" || Trim(row[1]) != "value" ||
          Trim(row[2]) != "source") {
        return InvalidArgument(
            fmt::format("{} line {}: the header must be key,value,source", origin, line));
      }
      header = false;
      continue;
    }
    if (row.size() != 3) {
      return InvalidArgument(fmt::format("{} line {}: {} fields, expected key,value,source", origin,
                                         line, row.size()));
    }
    const std::string key(Trim(row[0]));
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return InvalidArgument(
          fmt::format("{} line {}: unknown key '{}'", origin, line, Excerpt(key)));
    }
    if (Trim(row[2]).empty()) {
      return InvalidArgument(fmt::format("{} line {}: {} has no source", origin, line, key));
    }
    if (!values.emplace(key, std::pair{ToLower(Trim(row[1])), line}).second) {
      return InvalidArgument(fmt::format("{} line {}: {} given twice", origin, line, key));
    }
  }
  for (const char* key : kKeys) {
    if (!values.count(key)) return InvalidArgument(fmt::format("{}: no {} row", origin, key));
  }
  auto bad = [&](const std::string& key, const char* allowed) {
    return InvalidArgument(fmt::format("{} line {}: {} '{}': expected {}", origin,
                                       values[key].second, key, Excerpt(values[key].first),
                                       allowed));
  };
  auto yes_no = [&](const std::string& key, bool* out) -> Status {
    const std::string& v = values[key].first;
    if (v != "yes" && v != "no") return bad(key, "yes or no");
    *out = v == "yes";
    return Status::Ok();
  };
  d.attention = values["attention"].first;
  if (d.attention != "cudnn" && d.attention != "flash2") return bad("attention", "cudnn or flash2");
  RETURN_IF_ERROR(yes_no("overlap_grad_reduce", &d.overlap_grad_reduce));
  RETURN_IF_ERROR(yes_no("overlap_grad_reduce_zero3", &d.overlap_grad_reduce_zero3));
  RETURN_IF_ERROR(yes_no("tp_overlap", &d.tp_overlap));
  d.tp_overlap_backward = values["tp_overlap_backward"].first;
  if (d.tp_overlap_backward != "all" && d.tp_overlap_backward != "gather")
    return bad("tp_overlap_backward", "all or gather");
  for (auto [key, out] : {std::pair{"tp_overlap_rs_sms", &d.tp_overlap_rs_sms},
                          std::pair{"tp_overlap_bulk_sms", &d.tp_overlap_bulk_sms}}) {
    auto v = ParseSmCount(values[key].first);
    if (!v) return bad(key, "an SM count from 0 to 256");
    *out = *v;
  }
  static_assert(kMaxTpOverlapSplits == 64, "the message below names the bound");
  if (const std::string& splits = values["tp_overlap_rs_splits"].first; splits != "tp") {
    auto v = ParseInt(splits);
    if (!v || *v < 1 || *v > kMaxTpOverlapSplits) {
      return bad("tp_overlap_rs_splits", "tp or a count from 1 to 64");
    }
    d.tp_overlap_rs_splits = static_cast<int>(*v);
  }
  d.tp_overlap_rs_reduction = values["tp_overlap_rs_reduction"].first;
  if (d.tp_overlap_rs_reduction != "in_kernel" && d.tp_overlap_rs_reduction != "after")
    return bad("tp_overlap_rs_reduction", "in_kernel or after");
  d.sp_backward = values["sp_backward"].first;
  if (FrameworkBehaviour probe;
      d.sp_backward.empty() || !ApplySpBackward(d.sp_backward, &probe).ok()) {
    return bad("sp_backward", "regather or saved");
  }
  RETURN_IF_ERROR(yes_no("grad_reduce_fp32_bf16", &d.grad_reduce_fp32_bf16));
  RETURN_IF_ERROR(yes_no("grad_reduce_fp32_fp8", &d.grad_reduce_fp32_fp8));
  if (StatusOr<P2pWait> w = ParseP2pWait(values["p2p_blocking"].first); w.ok()) {
    d.p2p_wait = *w;
  } else {
    return bad("p2p_blocking", "yes, no or single_chunk");
  }
  RETURN_IF_ERROR(yes_no("ep_overlap", &d.ep_overlap));
  RETURN_IF_ERROR(yes_no("fp8_param_gather", &d.fp8_param_gather));
  RETURN_IF_ERROR(yes_no("recompute_modules_list", &d.recompute_modules_list));
  RETURN_IF_ERROR(yes_no("fused_projections", &d.fused_projections));
  // The words are the behaviour's (ApplyCpExchange, ApplyCpKvHeads): read through them.
  FrameworkBehaviour cp;
  for (auto [key, apply, allowed] :
       {std::tuple{"cp_exchange", &ApplyCpExchange, "ring or all_gather"},
        std::tuple{"cp_kv_heads", &ApplyCpKvHeads, "kv or query"}}) {
    if (values[key].first.empty() || !apply(values[key].first, &cp).ok()) return bad(key, allowed);
  }
  d.cp_all_gather = cp.cp_all_gather;
  d.cp_kv_repeated = cp.cp_kv_repeated;
  d.ep_dispatcher = values["ep_dispatcher"].first;
  if (!EpDispatcherIsHierarchical(d.ep_dispatcher).ok())
    return bad("ep_dispatcher", "alltoall, deepep or hybridep");
  const std::string& sp = values["sequence_parallel"].first;
  if (sp != "always" && sp != "optional") return bad("sequence_parallel", "always or optional");
  d.sp_always = sp == "always";
  const std::string& ew = values["elementwise"].first;
  if (ew != "fused" && ew != "eager") return bad("elementwise", "fused or eager");
  d.eager_elementwise = ew == "eager";
  auto loss = ParseCrossEntropyKernels(values["cross_entropy"].first);
  if (!loss.ok()) return bad("cross_entropy", "fused, unfused or eager");
  d.cross_entropy = *loss;
  const std::string& seq_dim = values["sp_sequence_dim"].first;
  if (seq_dim != "0" && seq_dim != "1") return bad("sp_sequence_dim", "0 or 1");
  d.sp_sequence_dim = seq_dim == "1" ? 1 : 0;
  if (const std::string& s = values["schedules"].first; s != "all") {
    for (std::string_view name : Split(s, ' ')) {
      if (Trim(name).empty()) continue;
      auto k = schedule::ParseScheduleKind(Trim(name));
      if (!k.ok()) return bad("schedules", "schedule names separated by spaces, or all");
      d.schedules.push_back(*k);
    }
    if (d.schedules.empty()) return bad("schedules", "at least one schedule, or all");
  }
  for (auto [key, out] : {std::pair{"zero_stages", &d.zero_stages},
                          std::pair{"zero_stages_pipelined", &d.zero_stages_pipelined}}) {
    auto stages = ParseZeroStages(values[key].first);
    if (!stages) return bad(key, "ZeRO stages 0-3 separated by spaces, each once");
    *out = *stages;
  }
  if (const std::string& b = values["dp_bucket_params"].first; b != "megatron") {
    auto v = ParseInt(b);
    if (!v || *v < 1 || *v > (int64_t{1} << 40))
      return bad("dp_bucket_params", "a parameter count >= 1, or megatron");
    d.dp_bucket_params = *v;
  }
  d.fsdp_unit = values["fsdp_unit"].first;
  if (d.fsdp_unit != "block" && d.fsdp_unit != "layer" && d.fsdp_unit != "parameter")
    return bad("fsdp_unit", "block, layer or parameter");
  if (const std::string& live = values["fsdp_max_live_params"].first; d.fsdp_unit == "parameter") {
    auto v = ParseInt(live);
    if (!v || *v < 1 || *v > (int64_t{1} << 40))
      return bad("fsdp_max_live_params", "a parameter count >= 1 (fsdp_unit parameter)");
    d.fsdp_max_live_params = *v;
  } else if (live != "none") {
    return bad("fsdp_max_live_params", "none (fsdp_unit block or layer)");
  }
  d.fsdp_copies = values["fsdp_copies"].first;
  if (d.fsdp_copies != "none" && d.fsdp_copies != "gather" && d.fsdp_copies != "gather_and_reduce")
    return bad("fsdp_copies", "none, gather or gather_and_reduce");
  d.fsdp_with_pp = values["fsdp_with_pp"].first;
  if (FrameworkBehaviour probe;
      d.fsdp_with_pp.empty() || !ApplyFsdpWithPp(d.fsdp_with_pp, &probe).ok())
    return bad("fsdp_with_pp", "per_microbatch or per_step");
  d.fp8_recipe = values["fp8_recipe"].first;
  if (d.fp8_recipe != "delayed" && d.fp8_recipe != "tensorwise" && d.fp8_recipe != "none")
    return bad("fp8_recipe", "delayed, tensorwise or none");
  auto count_or_search = [&](const std::string& key, const char* allowed, int* out) -> Status {
    const std::string& v = values[key].first;
    if (v == "search") return Status::Ok();
    auto n = ParseInt(v);
    if (!n || *n < 1 || *n > 64) return bad(key, allowed);
    *out = static_cast<int>(*n);
    return Status::Ok();
  };
  RETURN_IF_ERROR(count_or_search("pipeline_chunks", "a chunk count from 1 to 64, or search",
                                  &d.pipeline_chunks));
  if (const std::string& m = values["pipeline_microbatches"].first; m == "pp") {
    d.pipeline_microbatches_per_rank = 1;
  } else if (m != "search") {
    return bad("pipeline_microbatches", "pp (as many as the pipeline ranks) or search");
  }
  return d;
}

const FrameworkData& BuiltinFrameworkData(Framework f) {
  static const auto* const kData = [] {
    auto* m = new std::map<Framework, FrameworkData>();
    (*m)[Framework::kOther] = FrameworkData{};
    for (Framework g : kNamed) {
      auto d =
          ParseFrameworkData(g, BundledFrameworkCsv(g),
                             fmt::format("data/frameworks/{}.csv (built in)", FrameworkName(g)));
      // The built-in files are tested (framework_test.cc); a broken one falls back to defaults.
      (*m)[g] = d.ok() ? *d : FrameworkData{};
    }
    return m;
  }();
  return kData->at(f);
}

std::vector<schedule::ScheduleKind> FrameworkSchedules(Framework f) {
  return BuiltinFrameworkData(f).schedules;
}

bool FrameworkListsRecomputeModules(Framework f) {
  return f == Framework::kOther || BuiltinFrameworkData(f).recompute_modules_list;
}

bool FrameworkListsRecomputeModules(const PlanRequest& req) {
  if (req.framework.empty()) return true;
  const StatusOr<Framework> f = ParseFramework(req.framework);
  return !f.ok() || FrameworkListsRecomputeModules(*f);
}

std::optional<std::vector<int>> ParseZeroStages(std::string_view value) {
  std::vector<int> out;
  for (std::string_view word : Split(value, ' ')) {
    word = Trim(word);
    if (word.empty()) continue;
    auto v = ParseInt(word);
    if (!v || *v < 0 || *v > 3) return std::nullopt;
    if (std::find(out.begin(), out.end(), *v) != out.end()) return std::nullopt;
    out.push_back(static_cast<int>(*v));
  }
  if (out.empty()) return std::nullopt;
  std::sort(out.begin(), out.end());
  return out;
}

std::string ZeroStagesText(const std::vector<int>& stages) {
  std::vector<std::string> words;
  for (int z : stages) words.push_back(std::to_string(z));
  return Join(words, "|");
}

std::string ScheduleNamesText(const std::vector<schedule::ScheduleKind>& schedules) {
  std::vector<std::string> names;
  for (auto k : schedules) names.emplace_back(schedule::Info(k).name);
  return Join(names, "|");
}

std::string FrameworkCannotRun(Framework f, schedule::ScheduleKind schedule, int pp, int zero_stage,
                               bool sharded) {
  if (f == Framework::kOther) return "";
  const std::string name(FrameworkName(f));
  std::vector<std::string> out;
  const std::vector<schedule::ScheduleKind> schedules = FrameworkSchedules(f);
  if (pp > 1 && !schedules.empty() &&
      std::find(schedules.begin(), schedules.end(), schedule) == schedules.end()) {
    out.push_back(fmt::format("{} runs no {} (its schedules: {})", name,
                              schedule::Info(schedule).name, ScheduleNamesText(schedules)));
  }
  const std::vector<int> stages = FrameworkZeroStages(f, pp > 1);
  if (sharded && std::find(stages.begin(), stages.end(), zero_stage) == stages.end()) {
    out.push_back(fmt::format("{} has no ZeRO-{}{} (its stages: {})", name, zero_stage,
                              pp > 1 ? " with pp > 1" : "", ZeroStagesText(stages)));
  }
  return Join(out, "; ");
}

std::vector<int> FrameworkZeroStages(Framework f, bool pipelined) {
  const FrameworkData& d = BuiltinFrameworkData(f);
  const std::vector<int>& stages = pipelined ? d.zero_stages_pipelined : d.zero_stages;
  if (stages.empty()) return std::vector<int>(kSearchZeroStages.begin(), kSearchZeroStages.end());
  return stages;
}

StatusOr<bool> EpDispatcherIsHierarchical(std::string_view value) {
  if (value == "alltoall") return false;
  if (value == "deepep" || value == "hybridep") return true;
  return InvalidArgument(
      fmt::format("'{}': expected alltoall, deepep or hybridep", Excerpt(value)));
}

Status ApplyAttention(std::string_view value, FrameworkBehaviour* b) {
  if (value.empty()) return Status::Ok();
  if (value == "materialized") {
    b->fused_attention = false;
  } else if (value == "fused") {  // the framework's fused kernel
    b->fused_attention = true;
  } else if (value == "flash2" || value == "cudnn") {
    b->fused_attention = true;
    b->flash_attention_2 = value == "flash2";
  } else {
    return InvalidArgument(
        fmt::format("'{}': expected fused (the framework's kernel), flash2, cudnn or materialized",
                    Excerpt(value)));
  }
  return Status::Ok();
}

namespace {

// Whether `value` is `first` (true) or `second` (false): the two words of a behaviour key, in the
// order its messages name them; InvalidArgument naming the value otherwise.
StatusOr<bool> IsFirstOf(std::string_view value, std::string_view first, std::string_view second) {
  if (value != first && value != second) {
    return InvalidArgument(fmt::format("'{}': expected {} or {}", Excerpt(value), first, second));
  }
  return value == first;
}

// A two-word behaviour value over one field: "" keeps *field, `first` or `second` sets it to
// whether the value is `true_word` (one of the two).
Status SetFromWord(std::string_view value, std::string_view first, std::string_view second,
                   std::string_view true_word, bool* field) {
  if (value.empty()) return Status::Ok();
  RETURN_IF_ERROR(IsFirstOf(value, first, second).status());
  *field = value == true_word;
  return Status::Ok();
}

}  // namespace

Status ApplyFsdpWithPp(std::string_view value, FrameworkBehaviour* b) {
  return SetFromWord(value, "per_step", "per_microbatch", "per_step",
                     &b->fsdp_once_per_step_with_pp);
}

Status ApplyCpExchange(std::string_view value, FrameworkBehaviour* b) {
  return SetFromWord(value, "ring", "all_gather", "all_gather", &b->cp_all_gather);
}

Status ApplyCpKvHeads(std::string_view value, FrameworkBehaviour* b) {
  return SetFromWord(value, "kv", "query", "query", &b->cp_kv_repeated);
}

Status ApplyMasterWeights(std::string_view value, FrameworkBehaviour* b) {
  return SetFromWord(value, "fp32", "bf16_remainders", "bf16_remainders",
                     &b->master_weight_remainders);
}

Status ApplySpBackward(std::string_view value, FrameworkBehaviour* b) {
  if (value.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(b->sp_backward_regather, IsFirstOf(value, "regather", "saved"));
  b->sp_inputs_gathered = !b->sp_backward_regather;
  return Status::Ok();
}

std::optional<int> ParseSmCount(std::string_view value) {
  auto v = ParseInt(value);
  if (!v || *v < 0 || *v > kMaxTpOverlapSms) return std::nullopt;
  return static_cast<int>(*v);
}

StatusOr<std::pair<int, int>> ParseTpOverlapSms(std::string_view value) {
  const std::vector<std::string_view> parts = Split(value, ',');
  std::pair<int, int> out;
  bool ok = parts.size() == 1 || parts.size() == 2;
  for (size_t i = 0; ok && i < parts.size(); ++i) {
    auto v = ParseSmCount(Trim(parts[i]));
    ok = v.has_value();
    if (ok) (i == 0 ? out.first : out.second) = *v;
  }
  if (!ok) {
    return InvalidArgument(fmt::format("'{}': expected N or RS,BULK, SM counts from 0 to {}",
                                       Excerpt(value), kMaxTpOverlapSms));
  }
  if (parts.size() == 1) out.second = out.first;
  return out;
}

void ApplyBehaviour(const FrameworkBehaviour& b, PlanRequest* req) {
  req->fused_attention = b.fused_attention;
  req->overlap_grad_reduce = b.overlap_grad_reduce;
  req->tp_overlap = b.tp_overlap;
  req->tp_overlap_bwd_reduce_scatter = b.tp_overlap_bwd_reduce_scatter;
  req->tp_overlap_rs_sms = b.tp_overlap_rs_sms;
  req->tp_overlap_bulk_sms = b.tp_overlap_bulk_sms;
  req->tp_overlap_rs_splits = b.tp_overlap_rs_splits;
  req->tp_overlap_rs_reduce_after = b.tp_overlap_rs_reduce_after;
  req->sp_backward_regather = b.sp_backward_regather;
  req->sp_inputs_gathered = b.sp_inputs_gathered;
  req->fsdp_once_per_step_with_pp = b.fsdp_once_per_step_with_pp;
  req->fsdp_max_live_params = b.fsdp_max_live_params;
  req->p2p_wait = b.p2p_wait;
  req->fsdp_copy_out = b.fsdp_copy_out;
  req->fsdp_copy_in = b.fsdp_copy_in;
  req->flash_attention_2 = b.flash_attention_2;
  req->eager_elementwise = b.eager_elementwise;
  req->cross_entropy = b.cross_entropy;
  req->sp_rechunk_copies = b.sp_rechunk_copies;
  req->dp_bucket_params = b.dp_bucket_params;
  req->ep_hierarchical_dispatch = b.ep_hierarchical_dispatch;
  req->ep_overlap = b.ep_overlap;
  req->fp8_transformer_engine = b.fp8_transformer_engine;
  req->fp8_param_gather = b.fp8_param_gather;
  req->fused_projections = b.fused_projections;
  req->master_weight_remainders = b.master_weight_remainders;
  req->cp_all_gather = b.cp_all_gather;
  req->cp_kv_repeated = b.cp_kv_repeated;
  req->cpu_offload_layers = b.cpu_offload_layers;
  req->cpu_offload_required = b.cpu_offload_required;
  req->recompute_modules = b.recompute_modules;
}

FrameworkBehaviour FrameworkDefaults(Framework f, int zero_stage, Precision precision) {
  const FrameworkData& d = BuiltinFrameworkData(f);
  FrameworkBehaviour b;
  // Every framework listed attends through a fused kernel by default today; runs that predate it
  // say "materialized" in their own cell.
  b.fused_attention = true;
  b.flash_attention_2 = d.attention == "flash2";
  b.overlap_grad_reduce = zero_stage >= 3 ? d.overlap_grad_reduce_zero3 : d.overlap_grad_reduce;
  b.tp_overlap = d.tp_overlap;
  b.tp_overlap_bwd_reduce_scatter = d.tp_overlap_backward == "all";
  b.tp_overlap_rs_sms = d.tp_overlap_rs_sms;
  b.tp_overlap_bulk_sms = d.tp_overlap_bulk_sms;
  b.tp_overlap_rs_splits = d.tp_overlap_rs_splits;
  b.tp_overlap_rs_reduce_after = d.tp_overlap_rs_reduction == "after";
  (void)ApplySpBackward(d.sp_backward, &b);  // validated when the file was parsed
  b.fp32_grads = precision == Precision::kFp8 ? d.grad_reduce_fp32_fp8 : d.grad_reduce_fp32_bf16;
  b.sp_with_tp = d.sp_always;
  b.eager_elementwise = d.eager_elementwise;
  b.cross_entropy = d.cross_entropy;
  b.sp_rechunk_copies = d.sp_sequence_dim == 1;
  b.p2p_wait = d.p2p_wait;
  b.fsdp_copy_out = d.fsdp_copies != "none";
  b.fsdp_copy_in = d.fsdp_copies == "gather_and_reduce";
  (void)ApplyFsdpWithPp(d.fsdp_with_pp, &b);  // validated when the file was parsed
  b.fsdp_max_live_params = static_cast<double>(d.fsdp_max_live_params);
  b.dp_bucket_params = d.dp_bucket_params;
  b.ep_hierarchical_dispatch = d.ep_dispatcher != "alltoall";
  b.ep_overlap = d.ep_overlap;
  b.fp8_transformer_engine = d.fp8_recipe != "tensorwise";
  b.fp8_param_gather = d.fp8_param_gather;
  b.fused_projections = d.fused_projections;
  b.cp_all_gather = d.cp_all_gather;
  b.cp_kv_repeated = d.cp_kv_repeated;
  return b;
}

}  // namespace infralens::plan
