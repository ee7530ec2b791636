// Keys as torchtitan v0.2.2 reads them: the Training, Parallelism, ActivationCheckpoint and Model
// dataclasses of torchtitan/config/job_config.py, in the TOML layout of
// torchtitan/models/llama3/train_configs/llama3_70b.toml. Schedule names are PyTorch's
// get_schedule_class keys (torch/distributed/pipelining/schedules.py).
#include "io/export_torchtitan.h"

#include <fmt/format.h>

#include <optional>

#include "plan/parallel_config.h"
#include "schedule/schedule.h"

namespace infralens::io {

namespace {

struct Flavor {
  const char* name;    // [model] name: the train spec (torchtitan/models/__init__.py)
  const char* flavor;  // its model args (torchtitan/models/<name>/__init__.py)
  // Whether the train spec has a pipelining_fn: at v0.2.2 qwen3's and gpt_oss's are None, and
  // train.py raises "Pipeline Parallel is enabled but <name> does not support pipelining".
  bool pipelining = true;
};

// torchtitan v0.2.2's models and flavors for InfraLens' presets (their shapes match the flavors':
// llama3 8B/70B/405B in torchtitan/models/llama3/__init__.py, deepseek_v3 671B in
// torchtitan/models/deepseek_v3/__init__.py, qwen3 30B-A3B and 235B-A22B in
// torchtitan/models/qwen3/__init__.py, gpt_oss 120b in torchtitan/models/gpt_oss/__init__.py with
// the defaults of its model/args.py). Mixtral, Grok-1 and GPT have no torchtitan model.
std::optional<Flavor> FindFlavor(const std::string& preset) {
  if (preset == "llama3-8b") return Flavor{"llama3", "8B"};
  if (preset == "llama3-70b") return Flavor{"llama3", "70B"};
  if (preset == "llama3-405b") return Flavor{"llama3", "405B"};
  if (preset == "deepseek-v3") return Flavor{"deepseek_v3", "671B"};
  if (preset == "qwen3-30b-a3b") return Flavor{"qwen3", "30B-A3B", false};
  if (preset == "qwen3-235b-a22b") return Flavor{"qwen3", "235B-A22B", false};
  if (preset == "gpt-oss-120b") return Flavor{"gpt_oss", "120b", false};
  return std::nullopt;
}

std::string TomlStringList(const std::vector<std::string>& items) {
  std::string r = "[";
  for (size_t i = 0; i < items.size(); ++i) r += (i ? ", \"" : "\"") + items[i] + "\"";
  return r + "]";
}

// [model]: the torchtitan model and flavor of a preset (none for another model), and FP8.
std::string TorchtitanModelSection(const model::Model& m, bool fp8,
                                   std::vector<std::string>* notes) {
  std::string body;
  const std::optional<Flavor> flavor = FindFlavor(m.name);
  // v0.2 names converters by their config section: "quantize.linear.float8" swaps nn.Linear for
  // torchao's Float8Linear (register_model_converter in
  // torchtitan/components/quantization/float8.py).
  const char* kFloat8 = "converters = [\"quantize.linear.float8\"]  # torchao Float8Linear\n";
  if (flavor) {
    body += fmt::format("[model]\nname = \"{}\"\nflavor = \"{}\"\n", flavor->name, flavor->flavor);
    if (fp8) body += kFloat8;
    body += "\n";
    if (std::string(flavor->name) == "llama3" && m.rope_scaling != "llama3") {
      notes->push_back(
          "torchtitan's llama3 flavors always apply Llama 3.1's RoPE scaling (RoPEScalingArgs: "
          "factor 8, frequency factors 1 and 4, original context 8192); this model has none");
    }
    if (m.norm_eps != 1e-5) {
      notes->push_back(fmt::format(
          "norm epsilon {:g}: torchtitan's {} {} flavor uses its default 1e-5 (norm_eps is a model "
          "argument, not a config key)",
          m.norm_eps, flavor->name, flavor->flavor));
    }
  } else {
    notes->push_back(fmt::format(
        "[model]: torchtitan {} has no model for {}: add name and flavor of a model you register "
        "(not exported)",
        kTorchtitanVersion, m.name));
    if (fp8) {
      notes->push_back("FP8: add converters = [\"quantize.linear.float8\"] to [model]");
    }
  }
  if (fp8 && m.is_moe()) {
    notes->push_back(
        "FP8 covers the linear layers; the routed experts' grouped GEMMs need the prototype "
        "quantize.grouped_mm.float8 converter with fqns = [\"experts\"]");
  }

  return body;
}

std::string TorchtitanTrainingSection(const ExportJob& j) {
  std::string body;
  // Training: local_batch_size is per data-parallel rank; torchtitan accumulates gradients over
  // global_batch_size / (local_batch_size x data-parallel degree) steps. With pipeline parallelism
  // the local batch is split into microbatches of pipeline_parallel_microbatch_size instead.
  const int64_t local = j.pp > 1 ? j.micro_batch * j.microbatches : j.micro_batch;
  body += "[training]\n";
  body += fmt::format("local_batch_size = {}\n", local);
  body += fmt::format("global_batch_size = {}\n", j.global_batch);
  body += fmt::format("seq_len = {}\n", j.seq_len);
  body += "max_norm = 1.0  # gradient clipping\n\n";
  return body;
}

// The pipeline's keys: the schedule (1F1B for the single-stage zero-bubble ones), microbatch size
// and the plan's split as module lists.
std::string TorchtitanPipelineKeys(const plan::Layout& lay, const ExportJob& j,
                                   std::vector<std::string>* notes) {
  std::string body;
  const schedule::ScheduleKind k = lay.schedule;
  std::string name = std::string(schedule::Info(k).pytorch_name);
  if (k == schedule::ScheduleKind::kZBH1 || k == schedule::ScheduleKind::kZBH2) {
    // torchtitan's multi-stage schedules need at least two stages per rank; these hold one.
    notes->push_back(
        fmt::format("{} keeps one stage per rank, which torchtitan's multi-stage "
                    "(split-backward) schedules refuse: "
                    "exported as 1F1B; ZBVZeroBubble is the zero-bubble schedule torchtitan runs",
                    schedule::Info(k).name));
    name = "1F1B";
  }
  body += fmt::format("pipeline_parallel_schedule = \"{}\"\n", name);
  body += fmt::format("pipeline_parallel_microbatch_size = {}\n", j.micro_batch);
  // The plan's split, written out: without it torchtitan derives its own (2 stages per rank for
  // multi-stage schedules, the embedding and the output weighted as one layer each by
  // pipeline_parallel_first/last_stage_less_layers), which differs from the plan's whenever the
  // plan is uneven or has another stage count. With module_fqns_per_model_part the stage count
  // is the list's length and must divide by pipeline_parallel_degree (pipeline_module_split).
  body += "module_fqns_per_model_part = [\n";
  for (const auto& part : TorchtitanStageModules(j.stage_layers)) {
    body += "  " + TomlStringList(part) + ",\n";
  }
  body += "]\n";
  return body;
}

std::string TorchtitanParallelismSection(const plan::PlanRequest& req, const plan::Layout& lay,
                                         const ExportJob& j, std::vector<std::string>* notes) {
  std::string body;
  // Parallelism: FSDP (ZeRO-3) shards over data_parallel_shard_degree; plain data parallelism
  // (ZeRO-0) replicates over data_parallel_replicate_degree.
  int replicate = 1, shard = j.dp;
  std::string reshard;
  if (j.zero == 0) {
    replicate = j.dp;
    shard = 1;
  } else if (j.zero < 3) {
    reshard = "never";
    notes->push_back(
        fmt::format("ZeRO-{} has no exact torchtitan equivalent: exported as FSDP with "
                    "fsdp_reshard_after_forward = \"never\" "
                    "(weights gathered once per step, gradients and optimizer states sharded)",
                    j.zero));
  }
  body += "[parallelism]\n";
  body += fmt::format("data_parallel_replicate_degree = {}\n", replicate);
  body += fmt::format("data_parallel_shard_degree = {}\n", shard);
  if (!reshard.empty()) body += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", reshard);
  body += fmt::format("tensor_parallel_degree = {}\n", j.tp);
  body += fmt::format("pipeline_parallel_degree = {}\n", j.pp);
  if (j.pp > 1) body += TorchtitanPipelineKeys(lay, j, notes);
  body += fmt::format("context_parallel_degree = {}\n", j.cp);
  if (j.cp > 1) {
    // Parallelism.context_parallel_rotate_method, Literal["allgather", "alltoall"]: PyTorch's
    // _AllGatherRotater gathers every rank's K and V in one call, _AllToAllRotater passes each
    // block to the next rank (torch/distributed/tensor/experimental/_attention.py), the ring the
    // plan's cp_exchange "ring" charges.
    body += fmt::format("context_parallel_rotate_method = \"{}\"\n",
                        req.cp_all_gather ? "allgather" : "alltoall");
    if (!req.cp_kv_repeated) {
      notes->push_back(
          "torchtitan's attention repeats K and V to every query head before the "
          "context-parallel exchange (repeat_kv in its models' Attention.forward); the plan "
          "moved the model's key-value heads: plan with --cp-kv-heads query for its numbers");
    }
  }
  body += fmt::format("expert_parallel_degree = {}\n", j.ep);
  // The plan shards each routed expert over tp as well as ep (Megatron's default
  // expert_tensor_parallel_size = tp); torchtitan defaults to 1 and accepts only 1 or tp when
  // ep > 1 (ParallelDims._validate).
  if (j.ep > 1) body += fmt::format("expert_tensor_parallel_degree = {}\n", j.tp);
  body += "\n";
  if (j.ep > 1 && (shard * j.cp) % j.ep != 0) {
    notes->push_back(fmt::format(
        "expert_parallel_degree {} does not divide data_parallel_shard_degree x "
        "context_parallel_degree = {}: torchtitan v0.2.2 carves the expert mesh out of the FSDP "
        "ranks (efsdp = dp_shard x cp x tp / (etp x ep), ParallelDims.build_mesh) and cannot "
        "build this one",
        j.ep, shard * j.cp));
  }
  if (j.tp > 1 && !j.sp) {
    notes->push_back(
        "torchtitan's tensor parallelism always shards the norms along the sequence (sequence "
        "parallelism); the plan assumed it off");
  }
  return body;
}

std::string TorchtitanCheckpointSection(const plan::Layout& lay, model::RecomputeModules modules,
                                        std::vector<std::string>* notes) {
  std::string body;
  // Activation checkpointing: "none", "selective" or "full". torchtitan's selective is per layer
  // or per op ("op": keep matmul outputs, recompute the rest), the closest to Megatron's
  // recomputation of the attention core.
  body += "[activation_checkpoint]\n";
  if (lay.recompute == model::Recompute::kOpSac) {
    body += "mode = \"selective\"\nselective_ac_option = \"op\"\n";  // exactly this mode
  } else {
    body += fmt::format("mode = \"{}\"\n", model::RecomputeName(lay.recompute));
    if (lay.recompute == model::Recompute::kSelective) {
      body += "selective_ac_option = \"op\"\n";
      // torchtitan has no module list (Megatron-Core's --recompute-modules): say which the plan
      // assumed.
      notes->push_back(
          modules == model::RecomputeModules{}
              ? "the plan assumed Megatron's selective recompute (the attention core only); "
                "torchtitan's op-level SAC saves less and recomputes more: plan with --recompute "
                "op-sac for its numbers"
              : fmt::format("the plan assumed Megatron's selective recompute of {}; torchtitan has "
                            "no module list, and its op-level SAC saves and recomputes other "
                            "tensors: plan with --recompute op-sac for its numbers",
                            model::RecomputeModulesName(modules)));
    }
  }
  return body;
}

}  // namespace

std::vector<std::vector<std::string>> TorchtitanStageModules(
    const std::vector<int64_t>& stage_layers) {
  std::vector<std::vector<std::string>> parts(stage_layers.size());
  int64_t layer = 0;
  for (size_t s = 0; s < stage_layers.size(); ++s) {
    if (s == 0) parts[s].push_back("tok_embeddings");
    for (int64_t i = 0; i < stage_layers[s]; ++i)
      parts[s].push_back(fmt::format("layers.{}", layer++));
    if (s + 1 == stage_layers.size()) {
      parts[s].push_back("norm");
      parts[s].push_back("output");
    }
  }
  return parts;
}

bool TorchtitanRunsPipelines(const model::Model& m) {
  const std::optional<Flavor> flavor = FindFlavor(m.name);
  return !flavor || flavor->pipelining;
}

StatusOr<ExportedConfig> ExportTorchtitan(const plan::PlanRequest& req, const plan::Layout& lay) {
  ASSIGN_OR_RETURN(ExportJob j, ResolveExportJob(req, lay));
  // What torchtitan refuses at startup is refused here, naming the value and the rule.
  if (const std::optional<Flavor> flavor = FindFlavor(req.model.name);
      flavor && !flavor->pipelining && j.pp > 1) {
    return InvalidArgument(fmt::format(
        "pp {}: torchtitan {}'s {} model has no pipelining (its TrainSpec's pipelining_fn is "
        "None, and train.py raises \"Pipeline Parallel is enabled but {} does not support "
        "pipelining\"): plan it with pp 1",
        j.pp, kTorchtitanVersion, flavor->name, flavor->name));
  }
  // Every model's parallelize asserts seq_len % seq_len_divisor == 0 (plan::TorchtitanSeqDivisor).
  const int64_t divisor = plan::TorchtitanSeqDivisor(j.tp, j.cp);
  if (j.seq_len % divisor != 0) {
    return InvalidArgument(fmt::format(
        "sequence length {}: torchtitan {} needs a multiple of tp x 2 x cp = {} x 2 x {} = {} "
        "(ParallelDims.seq_len_divisor)",
        j.seq_len, kTorchtitanVersion, j.tp, j.cp, divisor));
  }
  ExportedConfig out;
  const bool fp8 = req.precision == plan::Precision::kFp8;
  std::string body = TorchtitanModelSection(req.model, fp8, &out.notes);
  body += TorchtitanTrainingSection(j);
  body += TorchtitanParallelismSection(req, lay, j, &out.notes);
  body += TorchtitanCheckpointSection(lay, plan::RecomputeModulesOf(req, lay), &out.notes);
  if (MasterWeightRemainders(req)) {
    out.notes.push_back(MasterWeightsNote(fmt::format("torchtitan {}", kTorchtitanVersion)));
  }
  if (const int64_t n = plan::CpuOffloadLayersFor(req, lay); n > 0) {
    out.notes.push_back(fmt::format(
        "activation offloading of {} layers (Megatron-Core's --cpu-offloading-num-layers): "
        "torchtitan {} has no such option (not exported); without it this layout keeps every "
        "layer's activations on the GPU",
        n, kTorchtitanVersion));
  }

  const std::string t = ExportHeaderComment(
      fmt::format("torchtitan {} job config sections", kTorchtitanVersion), req, lay, j,
      fmt::format(
          "# targets: pytorch/torchtitan {} ({})\n"
          "# (torchtitan/config/job_config.py, torchtitan/distributed/pipeline_parallel.py); "
          "merge\n"
          "# into your config with [job], [optimizer], [lr_scheduler] and [checkpoint] of your "
          "own\n",
          kTorchtitanVersion, kTorchtitanCommit),
      out.notes);
  out.text = t + "\n" + body;
  return out;
}

}  // namespace infralens::io
