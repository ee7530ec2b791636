#include "request/megatron_launch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/strings.h"
#include "io/launch_script.h"
#include "model/presets.h"

namespace infralens::request {

namespace {

// The flags a launch script replaces: degrees, layout options, batch, sequence, precision.
constexpr const char* kScriptFlags[] = {
    "--tp",          "--pp",           "--cp",
    "--ep",          "--dp",           "--vpp",
    "--zero",        "--fsdp",         "--distributed-optimizer",
    "--sp",          "--no-sp",        "--recompute",
    "--micro-batch", "--global-batch", "--seq",
    "--precision",   "--fp32-grads",   "--schedule",
    "--model"};

// A preset of the same architecture, for the vocabulary a tokenizer gives (Megatron reads it from
// the tokenizer when --vocab-size is absent).
const model::Model* SameShape(const model::Model& m) {
  for (const auto& p : model::ModelPresets()) {
    const model::Model& q = p.model;
    if (q.num_layers == m.num_layers && q.hidden == m.hidden && q.num_heads == m.num_heads &&
        q.num_experts == m.num_experts && q.gated_mlp == m.gated_mlp &&
        q.kv_lora_rank == m.kv_lora_rank && (m.is_mla() || q.num_kv_heads == m.num_kv_heads)) {
      return &q;
    }
  }
  return nullptr;
}

}  // namespace

StatusOr<MegatronLaunch> ApplyMegatronLaunch(std::string_view text, std::string_view origin,
                                             const GivenFn& user_given, RequestFlags* rf) {
  for (const char* f : kScriptFlags) {
    if (user_given(f)) {
      return InvalidArgument(fmt::format(
          "{} with --from-megatron: the script gives the model, layout and batch; edit the "
          "script (or drop --from-megatron)",
          f));
    }
  }
  MegatronLaunch out;
  ASSIGN_OR_RETURN(io::ExpandedLaunch launch, io::ExpandLaunchScript(text, origin));
  out.notes = launch.notes;
  ASSIGN_OR_RETURN(out.job, io::ReadMegatronArgs(launch.command, origin));
  io::MegatronJob& job = out.job;
  model::Model& m = job.model;
  m.name = fmt::format("{} (Megatron-LM script)", origin);
  if (m.vocab == 0) {
    const model::Model* same = SameShape(m);
    if (same == nullptr) {
      return InvalidArgument(fmt::format(
          "{}: no --vocab-size, and the shape ({} layers, hidden {}) is no preset's: Megatron "
          "takes the vocabulary from the tokenizer; add --vocab-size N to the script",
          origin, m.num_layers, m.hidden));
    }
    m.vocab = same->vocab;
    out.notes.push_back(fmt::format(
        "no --vocab-size: the vocabulary of {} ({} tokens), the preset of the same shape",
        same->name, same->vocab));
  }
  RETURN_IF_ERROR(model::Validate(m));
  TrainingFlags& tf = rf->tf;
  tf.model_given = m;
  ClusterFlags& cf = rf->cf;
  cf.tp = job.parallel.tp;
  cf.pp = job.parallel.pp;
  cf.cp = job.parallel.cp;
  cf.ep = job.parallel.ep;
  cf.dp = 0;  // what the GPUs leave
  tf.par = job.parallel;
  tf.recompute = model::RecomputeName(job.recompute);
  tf.micro_batch = static_cast<int>(job.micro_batch);
  tf.global_batch = static_cast<int>(job.global_batch);
  tf.seq = static_cast<int>(job.seq_len);
  tf.precision = plan::PrecisionName(job.precision);
  tf.fp32_grads = job.fp32_gradients;
  // The script's --fp8-param-gather, unless the user's own flag says otherwise.
  if (job.fp8_param_gather && !user_given("--fp8-param-gather")) rf->fp8_param_gather = "yes";
  if (job.master_weight_remainders && !user_given("--master-weights")) {
    rf->master_weights = "bf16_remainders";
  }
  // The script's selective recompute modules, likewise.
  if (job.recompute_modules != model::RecomputeModules{} && !user_given("--recompute-modules")) {
    rf->recompute_modules = model::RecomputeModulesName(job.recompute_modules);
  }
  // The script's activation offloading, likewise: the user's requirement, as a flag would be.
  if (job.cpu_offload_layers > 0 && !user_given("--cpu-offload-layers")) {
    rf->cpu_offload_layers = std::to_string(job.cpu_offload_layers);
  }
  // Megatron runs 1F1B, interleaved when there are virtual stages.
  tf.schedule_name = job.parallel.vpp > 1 ? "interleaved-1f1b" : "1f1b";
  out.given = {"--tp",          "--pp",  "--cp",        "--ep",       "--recompute",
               "--micro-batch", "--seq", "--precision", "--schedule", "--model"};
  if (job.global_batch > 0) out.given.insert("--global-batch");
  if (!user_given("--gpus") && !user_given("--nodes") && job.nodes > 0 && job.gpus_per_node > 0) {
    cf.gpus = job.nodes * job.gpus_per_node;
    out.given.insert("--gpus");
    out.notes.push_back(fmt::format("GPUs: {} nodes x {} (torchrun --nnodes, --nproc_per_node)",
                                    job.nodes, job.gpus_per_node));
  }
  if (job.global_batch == 0) {
    out.notes.push_back(
        "no --global-batch-size: Megatron's default is micro-batch x data-parallel size (one "
        "microbatch per step); InfraLens assumed 2 x pp microbatches");
  }
  // --recompute-modules (default core_attn) widens Megatron's selective recomputation; the plan's
  // selective is the attention core only, so its activation memory is an upper bound then.
  if (const size_t at = launch.command.find("--recompute-modules"); at != std::string::npos) {
    const size_t end = launch.command.find(" --", at + 1);
    const std::string modules =
        launch.command.substr(at, (end == std::string::npos ? launch.command.size() : end) - at);
    if (modules.find("mlp") != std::string::npos || modules.find("moe") != std::string::npos ||
        modules.find("layernorm") != std::string::npos ||
        modules.find("mla_up_proj") != std::string::npos) {
      out.notes.push_back(fmt::format(
          "{}: InfraLens' selective recompute is the attention core only; the script recomputes "
          "more, so the activation memory predicted is an upper bound",
          Excerpt(modules, 120)));
    }
  }
  if (!job.ignored.empty()) {
    out.notes.push_back(fmt::format("flags not modelled (data, optimizer, logging, ...): {}",
                                    fmt::join(job.ignored, " ")));
  }
  return out;
}

}  // namespace infralens::request
