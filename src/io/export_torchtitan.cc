// Keys as torchtitan v0.2 reads them: the Training, Parallelism, ActivationCheckpoint and Model
// dataclasses of torchtitan/config/job_config.py, in the TOML layout of
// torchtitan/models/llama3/train_configs/llama3_70b.toml. Schedule names are PyTorch's
// get_schedule_class keys (torch/distributed/pipelining/schedules.py).
#include "io/export_torchtitan.h"

#include <fmt/format.h>

#include "schedule/schedule.h"

namespace infralens::io {

namespace {

// torchtitan's llama3 flavors (torchtitan/models/llama3/__init__.py) for InfraLens' presets.
const char* Llama3Flavor(const std::string& preset) {
  if (preset == "llama3-8b") return "8B";
  if (preset == "llama3-70b") return "70B";
  if (preset == "llama3-405b") return "405B";
  return nullptr;
}

}  // namespace

StatusOr<ExportedConfig> ExportTorchtitan(const plan::PlanRequest& req, const plan::Layout& lay) {
  ASSIGN_OR_RETURN(ExportJob j, ResolveExportJob(req, lay));
  const model::Model& m = req.model;
  ExportedConfig out;
  std::string body;

  const char* flavor = Llama3Flavor(m.name);
  if (flavor != nullptr) {
    body += fmt::format("[model]\nname = \"llama3\"\nflavor = \"{}\"\n", flavor);
    if (req.precision == plan::Precision::kFp8)
      body += "converters = [\"float8\"]  # torchao Float8Linear\n";
    body += "\n";
  } else {
    out.notes.push_back(fmt::format(
        "[model]: choose torchtitan's model name and flavor for {} (not exported)", m.name));
    if (req.precision == plan::Precision::kFp8) {
      out.notes.push_back("FP8: add converters = [\"float8\"] to [model] (needs torchao)");
    }
  }

  // Training: local_batch_size is per data-parallel rank; torchtitan accumulates gradients over
  // global_batch_size / (local_batch_size x data-parallel degree) steps. With pipeline parallelism
  // the local batch is split into microbatches of pipeline_parallel_microbatch_size instead.
  const int64_t local = j.pp > 1 ? j.micro_batch * j.microbatches : j.micro_batch;
  body += "[training]\n";
  body += fmt::format("local_batch_size = {}\n", local);
  body += fmt::format("global_batch_size = {}\n", j.global_batch);
  body += fmt::format("seq_len = {}\n", j.seq_len);
  body += "max_norm = 1.0  # gradient clipping\n\n";

  // Parallelism: FSDP (ZeRO-3) shards over data_parallel_shard_degree; plain data parallelism
  // (ZeRO-0) replicates over data_parallel_replicate_degree.
  int replicate = 1, shard = j.dp;
  std::string reshard;
  if (j.zero == 0) {
    replicate = j.dp;
    shard = 1;
  } else if (j.zero < 3) {
    reshard = "never";
    out.notes.push_back(
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
  if (j.pp > 1) {
    const schedule::ScheduleKind k = lay.schedule;
    std::string name = std::string(schedule::Info(k).pytorch_name);
    if (k == schedule::ScheduleKind::kZBH1 || k == schedule::ScheduleKind::kZBH2) {
      // torchtitan's multi-stage schedules need at least two stages per rank; these hold one.
      out.notes.push_back(
          fmt::format("{} keeps one stage per rank, which torchtitan's multi-stage "
                      "(split-backward) schedules refuse: "
                      "exported as 1F1B; ZBVZeroBubble is the zero-bubble schedule torchtitan runs",
                      schedule::Info(k).name));
      name = "1F1B";
    }
    body += fmt::format("pipeline_parallel_schedule = \"{}\"\n", name);
    body += fmt::format("pipeline_parallel_microbatch_size = {}\n", j.micro_batch);
    if (j.layers_per_chunk == 0) {
      // torchtitan splits by module names; its default weights the embedding and the output
      // as one layer each (generate_llm_fqn_per_model_part), which is the split with the
      // embedding and the loss counted.
      out.notes.push_back(fmt::format(
          "uneven stages ({}): torchtitan's default split counts the embedding and the output as "
          "a layer each; for another split list the layers of each stage in "
          "module_fqns_per_model_part",
          plan::StageSplitText(j.stage_layers)));
    } else if (j.vpp > 2) {
      body += fmt::format("pipeline_parallel_layers_per_stage = {}\n", j.layers_per_chunk);
      out.notes.push_back(
          fmt::format("pipeline_parallel_layers_per_stage = {} asks for {} x {} = {} stages; "
                      "releases that count the embedding "
                      "and output as layers (pipeline_parallel_first/last_stage_less_layers) split "
                      "differently: check the "
                      "stage count in the log",
                      j.layers_per_chunk, j.pp, j.vpp, j.pp * j.vpp));
    }
  }
  body += fmt::format("context_parallel_degree = {}\n", j.cp);
  body += fmt::format("expert_parallel_degree = {}\n\n", j.ep);
  if (j.ep > 1 && j.ep > shard * j.cp) {
    out.notes.push_back(
        fmt::format("expert_parallel_degree {} exceeds data_parallel_shard_degree x "
                    "context_parallel_degree = {}: torchtitan borrows EP ranks from FSDP (dp2ep)",
                    j.ep, shard * j.cp));
  }
  if (j.tp > 1 && !j.sp) {
    out.notes.push_back(
        "torchtitan's tensor parallelism always shards the norms along the sequence (sequence "
        "parallelism); the plan assumed it off");
  }

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
      out.notes.push_back(
          "the plan assumed Megatron's selective recompute (the attention core only); torchtitan's "
          "op-level SAC saves less and recomputes more: plan with --recompute op-sac for its "
          "numbers");
    }
  }

  std::string t;
  t += fmt::format(
      "# torchtitan {} job config sections for {} on {} x {} ({}: {} nodes x {} GPUs)\n",
      kTorchtitanVersion, m.name, req.gpus(), req.gpu.name, req.cluster.name, req.cluster.num_nodes,
      req.cluster.node.gpus_per_node);
  t += fmt::format("# plan: {} ({} microbatches of {} x {} tokens per step)\n", lay.ToString(),
                   j.microbatches, j.micro_batch, j.seq_len);
  t += fmt::format(
      "# keys: torchtitan {} (torchtitan/config/job_config.py); merge into your config with "
      "[job],\n"
      "# [optimizer], [lr_scheduler] and [checkpoint] of your own\n",
      kTorchtitanVersion);
  for (const auto& n : out.notes) t += "# note: " + n + "\n";
  out.text = t + "\n" + body;
  return out;
}

}  // namespace infralens::io
