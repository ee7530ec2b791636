// Every argument below is spelled as megatron/training/arguments.py (NVIDIA/Megatron-LM commit
// 000c4ac, 2025-11-13) defines it; the function that defines it is named beside each group.
// tests/data/megatron_arguments_flags.txt lists that file's flags; export_rules_test.cc checks
// every export against it and against validate_args / TransformerConfig rules.
#include "io/export_megatron.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/strings.h"
#include "schedule/schedule.h"

namespace infralens::io {

namespace {

struct Args {
  std::vector<std::pair<std::string, std::string>> list;  // (flag, value or "")
  void Add(std::string flag, std::string value = "") {
    list.emplace_back(std::move(flag), std::move(value));
  }
  void Add(std::string flag, int64_t value) { Add(std::move(flag), std::to_string(value)); }
};

// Megatron's --moe-layer-freq pattern: a Python list expression of 0 (dense) and 1 (MoE) per
// layer, run-length encoded ("([0]*3+[1]*58)"); arguments.py accepts only , digits [ ] ( ) + *.
std::string MoeLayerPattern(const model::Model& m) {
  std::vector<std::string> runs;
  int64_t i = 0;
  while (i < m.num_layers) {
    const bool moe = model::IsMoeLayer(m, i);
    int64_t j = i;
    while (j < m.num_layers && model::IsMoeLayer(m, j) == moe) ++j;
    const int64_t n = j - i;
    runs.push_back(n == 1 ? fmt::format("[{}]", moe ? 1 : 0)
                          : fmt::format("[{}]*{}", moe ? 1 : 0, n));
    i = j;
  }
  return fmt::format("({})", Join(runs, "+"));
}

// _add_distributed_args and _add_training_args: parallel degrees, virtual stages, the distributed
// optimizer / FSDP, overlap of the data-parallel collectives, the rank order and recomputation.
void AddMegatronParallelArgs(const plan::PlanRequest& req, const plan::Layout& lay,
                             const ExportJob& j, Args* a) {
  a->Add("--tensor-model-parallel-size", j.tp);
  a->Add("--pipeline-model-parallel-size", j.pp);
  if (!j.layout.empty()) {
    // Megatron-Core's general form; it implies the virtual stages (stages / pp), so no vpp flag.
    a->Add("--pipeline-model-parallel-layout", fmt::format("'{}'", j.layout));
  } else if (j.vpp > 1) {
    if (j.layers_per_chunk > 0) {
      // Either this or --num-virtual-stages-per-pipeline-rank (newer, mutually exclusive); this
      // one also works on Megatron-LM releases before the second was added.
      a->Add("--num-layers-per-virtual-pipeline-stage", j.layers_per_chunk);
    } else {
      // Uneven stages have no single layer count per chunk: the chunk count it is.
      a->Add("--num-virtual-stages-per-pipeline-rank", j.vpp);
    }
  }
  // Uneven stages, as transformer_config.py takes them (get_num_layers_to_build in
  // megatron/core/transformer/transformer_block.py splits the same way plan::StageLayerCounts
  // does).
  if (j.first_stage_layers > 0) a->Add("--decoder-first-pipeline-num-layers", j.first_stage_layers);
  if (j.last_stage_layers > 0) a->Add("--decoder-last-pipeline-num-layers", j.last_stage_layers);
  if (j.embedding_in_split) a->Add("--account-for-embedding-in-pipeline-split");
  if (j.loss_in_split) a->Add("--account-for-loss-in-pipeline-split");
  if (j.cp > 1) a->Add("--context-parallel-size", j.cp);
  // _add_moe_args.
  if (j.ep > 1) a->Add("--expert-model-parallel-size", j.ep);
  // _add_training_args.
  if (j.sp) a->Add("--sequence-parallel");
  if (j.zero == 1) {
    a->Add("--use-distributed-optimizer");
    // Master weights as BF16 remainders: Megatron-Core's precision-aware optimizer hands
    // Transformer Engine's FusedAdam master_weights with store_param_remainders (OptimizerConfig
    // default True, TE >= 2.1; megatron/core/optimizer/__init__.py). Only with the distributed
    // optimizer and Adam (OptimizerConfig.__post_init__).
    if (MasterWeightRemainders(req)) a->Add("--use-precision-aware-optimizer");
  } else if (j.zero >= 2) {
    // Megatron FSDP: optim_grads = ZeRO-2, optim_grads_params = ZeRO-3 (it requires the
    // fsdp_dtensor checkpoint format, validate_args).
    a->Add("--use-megatron-fsdp");
    a->Add("--data-parallel-sharding-strategy", j.zero == 2 ? "optim_grads" : "optim_grads_params");
    a->Add("--ckpt-format", "fsdp_dtensor");
  }
  if (j.dp * j.cp > 1 && req.overlap_grad_reduce) {
    a->Add("--overlap-grad-reduce");
    // Only with the distributed optimizer or Megatron FSDP, and only with --overlap-grad-reduce.
    if (j.zero >= 1) a->Add("--overlap-param-gather");
  }
  if (lay.order == "tp-cp-ep-pp-dp") a->Add("--use-tp-pp-dp-mapping");
  // _add_training_args: recomputation. Selective takes no --recompute-method (validate_args).
  if (lay.recompute == model::Recompute::kFull) {
    a->Add("--recompute-granularity", "full");
    a->Add("--recompute-method", "uniform");
    a->Add("--recompute-num-layers", 1);
  } else if (lay.recompute == model::Recompute::kSelective) {
    a->Add("--recompute-granularity", "selective");
    // nargs='*', default ["core_attn"] (arguments.py, TransformerConfig.recompute_modules).
    if (const model::RecomputeModules mods = plan::RecomputeModulesOf(req, lay);
        mods != model::RecomputeModules{}) {
      a->Add("--recompute-modules", model::RecomputeModulesName(mods));
    }
  }
  // Activation offloading where the layout runs it (plan::CpuOffloadLayersFor): validate_args
  // turns cpu_offloading on when --cpu-offloading-num-layers is above 0.
  if (const int64_t n = plan::CpuOffloadLayersFor(req, lay); n > 0) {
    a->Add("--cpu-offloading-num-layers", n);
  }
}

// _add_network_size_args' RoPE: the base and the scaling Megatron-LM can express; the notes say
// what it cannot.
void AddMegatronRopeArgs(const model::Model& m, Args* a, std::vector<std::string>* notes) {
  a->Add("--position-embedding-type", "rope");
  // arguments.py: --rotary-base is an int, default 10000 (Llama 3: 500000).
  if (m.rope_theta > 0) a->Add("--rotary-base", static_cast<int64_t>(std::llround(m.rope_theta)));
  // --use-rope-scaling is Llama 3.1's scaling; --rope-scaling-factor defaults to 8.0, and the
  // low/high frequency factors and original context are fixed at 1, 4 and 8192
  // (RotaryEmbedding._apply_scaling, megatron/core/models/common/embeddings/
  // rotary_pos_embedding.py).
  if (m.rope_scaling == "llama3") {
    a->Add("--use-rope-scaling");
    if (m.rope_factor != 8) a->Add("--rope-scaling-factor", fmt::format("{:g}", m.rope_factor));
    if (m.rope_low_freq_factor != 1 || m.rope_high_freq_factor != 4 ||
        m.rope_original_context != 8192) {
      notes->push_back(fmt::format(
          "RoPE scaling: Megatron-LM fixes low_freq_factor 1, high_freq_factor 4 and an original "
          "context of 8192; the model has {:g}, {:g} and {}",
          m.rope_low_freq_factor, m.rope_high_freq_factor, m.rope_original_context));
    }
  } else if (m.rope_scaling == "yarn" && m.is_mla()) {
    // MLA's RoPE is YaRN (MLATransformerConfig rope_type "yarn"); --rotary-scaling-factor
    // defaults to 1.0 (no scaling); the original context is the config's fixed 4096.
    a->Add("--rotary-scaling-factor", fmt::format("{:g}", m.rope_factor));
    notes->push_back(fmt::format(
        "YaRN: --mscale and --mscale-all-dim (defaults 1.0 and 0.0) are not read from the "
        "model; DeepSeek-V3's config.json sets both to 1.0{}",
        m.rope_original_context != 4096
            ? fmt::format("; its original context {} is not MLATransformerConfig's fixed 4096",
                          m.rope_original_context)
            : ""));
  } else if (!m.rope_scaling.empty()) {
    notes->push_back(fmt::format(
        "RoPE scaling {} (factor {:g}): not exported; pretrain_gpt.py's --use-rope-scaling is "
        "Llama 3.1's only (YaRN is MLA's --rope-type yarn with --rotary-scaling-factor)",
        m.rope_scaling, m.rope_factor));
  }
}

// _add_network_size_args: the model's shape, positions, dropout and biases.
void AddMegatronShapeArgs(const model::Model& m, Args* a, std::vector<std::string>* notes) {
  a->Add("--num-layers", m.num_layers);
  a->Add("--hidden-size", m.hidden);
  a->Add("--ffn-hidden-size", m.ffn_hidden > 0 ? m.ffn_hidden : m.expert_ffn_hidden);
  a->Add("--num-attention-heads", m.num_heads);
  if (!m.is_mla()) {
    if (m.num_kv_heads > 0 && m.num_kv_heads < m.num_heads) {
      a->Add("--group-query-attention");
      a->Add("--num-query-groups", m.num_kv_heads);
    }
    if (m.head_dim > 0 && m.head_dim * m.num_heads != m.hidden) a->Add("--kv-channels", m.head_dim);
  }
  if (m.gated_mlp) a->Add("--swiglu");
  if (!m.layernorm) a->Add("--normalization", "RMSNorm");
  // _add_network_size_args: --norm-epsilon, default 1e-5.
  if (m.norm_eps != kMegatronNormEps) a->Add("--norm-epsilon", fmt::format("{:g}", m.norm_eps));
  // _add_network_size_args (under _add_moe_args' neighbours): --qk-layernorm builds the query and
  // key norms; with --multi-latent-attention they are MLA's q_a and kv_a latent norms
  // (megatron/core/transformer/multi_latent_attention.py), which DeepSeek-V2/V3 always have.
  if (m.qk_norm || m.is_mla()) a->Add("--qk-layernorm");
  if (m.learned_positions == 0) AddMegatronRopeArgs(m, a, notes);
  if (m.sliding_window > 0) {
    // --window-size takes a tuple "(left,right)"; -1 is unbounded (arguments.py tuple_type).
    a->Add("--window-size", fmt::format("'({},0)'", m.sliding_window));
    // Full attention on every N-th layer (arguments.py, moe_freq_type).
    if (m.sliding_window_full_every > 0) {
      a->Add("--window-attn-skip-freq", m.sliding_window_full_every);
    }
  }
  // arguments.py defaults both to 0.1; a model trained without dropout must say 0.
  a->Add("--attention-dropout", fmt::format("{:g}", m.attention_dropout));
  a->Add("--hidden-dropout", fmt::format("{:g}", m.hidden_dropout));
  if (!m.tied_embeddings) a->Add("--untie-embeddings-and-output-weights");
  if (!m.qkv_bias && !m.out_bias && !m.mlp_bias) {
    a->Add("--disable-bias-linear");
  } else if (m.qkv_bias && !m.out_bias && !m.mlp_bias) {
    a->Add("--disable-bias-linear");
    a->Add("--add-qkv-bias");  // _add_training_args: bias only on Q, K, V
  }
}

// _add_moe_args.
void AddMegatronMoeArgs(const model::Model& m, const ExportJob& j, Args* a) {
  a->Add("--num-experts", m.num_experts);
  a->Add("--moe-router-topk", m.top_k);
  a->Add("--moe-ffn-hidden-size", m.expert_ffn_hidden);
  if (m.num_shared_experts > 0) {
    a->Add("--moe-shared-expert-intermediate-size",
           m.num_shared_experts * m.shared_expert_ffn_hidden);
  }
  if (model::NumMoeLayers(m) != m.num_layers)
    a->Add("--moe-layer-freq", fmt::format("'{}'", MoeLayerPattern(m)));
  // DeepSeek-V3's aux-loss-free balancing: a learned per-expert bias in the routing decision.
  // TransformerConfig.__post_init__ refuses the bias with softmax scores ("Expert bias for
  // aux-loss-free routing only supports sigmoid score function").
  if (m.router_sigmoid) a->Add("--moe-router-score-function", "sigmoid");
  if (m.router_bias) a->Add("--moe-router-enable-expert-bias");
  // Group-limited routing (it needs both, the groups dividing the experts: __post_init__).
  if (m.router_groups > 0) {
    a->Add("--moe-router-num-groups", m.router_groups);
    a->Add("--moe-router-group-topk", m.router_group_topk);
  }
  if (m.router_scale > 0 && m.router_scale != 1) {
    a->Add("--moe-router-topk-scaling-factor", fmt::format("{:g}", m.router_scale));
  }
  // Top-1 softmax routing without pre-softmax has a zero gradient and is refused.
  if (m.top_k == 1 && !m.router_sigmoid) a->Add("--moe-router-pre-softmax");
  a->Add("--moe-grouped-gemm");
  if (j.ep > 1) a->Add("--moe-token-dispatcher-type", "alltoall");
}

// _add_mla_args.
void AddMegatronMlaArgs(const model::Model& m, Args* a) {
  a->Add("--multi-latent-attention");
  if (m.q_lora_rank > 0) a->Add("--q-lora-rank", m.q_lora_rank);
  a->Add("--kv-lora-rank", m.kv_lora_rank);
  a->Add("--qk-head-dim", m.qk_nope_head_dim);
  a->Add("--qk-pos-emb-head-dim", m.qk_rope_head_dim);
  a->Add("--v-head-dim", m.v_head_dim);
}

// What Megatron-LM cannot express, or does differently from the plan.
void AddMegatronNotes(const plan::PlanRequest& req, const plan::Layout& lay, const ExportJob& j,
                      std::vector<std::string>* notes) {
  const model::Model& m = req.model;
  const schedule::ScheduleKind k = lay.schedule;
  if (MasterWeightRemainders(req) && j.zero != 1) {
    // --use-precision-aware-optimizer takes the distributed optimizer (OptimizerConfig).
    notes->push_back(MasterWeightsNote(
        fmt::format("Megatron-LM without the distributed optimizer (ZeRO {})", j.zero)));
  }
  if (j.pp > 1 && k != schedule::ScheduleKind::k1F1B &&
      k != schedule::ScheduleKind::kInterleaved1F1B) {
    notes->push_back(
        fmt::format("the plan's schedule {} has no Megatron-LM argument: Megatron runs 1F1B, or "
                    "interleaved 1F1B with "
                    "virtual stages; the predicted times are {}'s",
                    schedule::Info(k).name, schedule::Info(k).name));
  }
  if (j.pp > 1 && k == schedule::ScheduleKind::kInterleaved1F1B && j.microbatches % j.pp != 0) {
    notes->push_back(
        fmt::format("{} microbatches is not a multiple of pp={}: older Megatron-LM releases refuse "
                    "that with the interleaved schedule",
                    j.microbatches, j.pp));
  }
  if (lay.order != cluster::kDefaultOrder && lay.order != "tp-cp-ep-pp-dp") {
    notes->push_back(fmt::format(
        "rank order {}: Megatron-LM places ranks tp-cp-ep-dp-pp (or tp-cp-ep-pp-dp with "
        "--use-tp-pp-dp-mapping) and has no argument for this order",
        lay.order));
  }
  if (!req.fp32_gradients) {
    notes->push_back(
        "with --bf16 Megatron-LM accumulates and reduces gradients in FP32 unless "
        "--grad-reduce-in-bf16 is given; the plan counted 2-byte gradients");
  }
  if (j.zero >= 2 && j.pp > 1) {
    notes->push_back(
        "Megatron FSDP (--use-megatron-fsdp) is documented for data parallelism; check that your "
        "release supports it with pipeline parallelism");
  }
  if (m.shared_expert_gate) {
    notes->push_back(
        "the model gates its shared expert (Qwen-MoE's shared_expert_gate); arguments.py has no "
        "flag for it");
  }
  // _vocab_size_with_padding (megatron/training/tokenizer/tokenizer.py): the embedding and output
  // rows are padded up to a multiple of --make-vocab-size-divisible-by (128) x tp.
  const int64_t padded = MegatronPaddedVocab(m.vocab, kMegatronVocabDivisor, j.tp);
  if (padded != m.vocab) {
    notes->push_back(fmt::format(
        "vocabulary: {} tokens, set by your tokenizer (or --vocab-size with --tokenizer-type "
        "NullTokenizer); Megatron pads it to {} (a multiple of 128 x tp {}), {} rows the plan "
        "does not count",
        m.vocab, padded, j.tp, padded - m.vocab));
  } else {
    notes->push_back(
        fmt::format("vocabulary: {} tokens, set by your tokenizer (or --vocab-size with "
                    "--tokenizer-type NullTokenizer); a multiple of 128 x tp, so not padded",
                    m.vocab));
  }
}

// The script: the header comment with the notes, then torchrun pretrain_gpt.py and the arguments.
std::string MegatronScript(const plan::PlanRequest& req, const plan::Layout& lay,
                           const ExportJob& j, const Args& a,
                           const std::vector<std::string>& notes) {
  std::string t = ExportHeaderComment(
      "Megatron-LM arguments", req, lay, j,
      fmt::format(
          "# targets: NVIDIA/Megatron-LM commit {}\n"
          "# (megatron/training/arguments.py, validate_args, TransformerConfig); add your data,\n"
          "# tokenizer, optimizer, learning-rate and checkpoint arguments\n",
          kMegatronCommit),
      notes);
  // validate_args: TP or CP on Hopper and earlier needs one CUDA connection so that the collectives
  // of a layer are issued in order.
  if (j.tp > 1 || j.cp > 1) t += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  t += fmt::format("torchrun --nproc_per_node {} --nnodes {} pretrain_gpt.py \\\n",
                   req.cluster.node.gpus_per_node, req.cluster.num_nodes);
  for (size_t i = 0; i < a.list.size(); ++i) {
    const auto& [flag, value] = a.list[i];
    t += "    " + flag + (value.empty() ? "" : " " + value) +
         (i + 1 < a.list.size() ? " \\\n" : "\n");
  }
  return t;
}

}  // namespace

int64_t MegatronPaddedVocab(int64_t vocab, int64_t divisible_by, int tp) {
  const int64_t multiple = divisible_by * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

StatusOr<ExportedConfig> ExportMegatron(const plan::PlanRequest& req, const plan::Layout& lay) {
  ASSIGN_OR_RETURN(ExportJob j, ResolveExportJob(req, lay));
  const model::Model& m = req.model;
  ExportedConfig out;
  Args a;
  AddMegatronParallelArgs(req, lay, j, &a);
  // _add_training_args and _add_data_args: batch and sequence.
  a.Add("--micro-batch-size", j.micro_batch);
  a.Add("--global-batch-size", j.global_batch);
  a.Add("--seq-length", j.seq_len);
  // Required by validate_args, and at least --seq-length.
  a.Add("--max-position-embeddings", std::max(j.seq_len, m.seq_len));
  AddMegatronShapeArgs(m, &a, &out.notes);
  if (m.is_moe()) AddMegatronMoeArgs(m, j, &a);
  if (m.is_mla()) AddMegatronMlaArgs(m, &a);
  // _add_mixed_precision_args and _add_transformer_engine_args.
  a.Add("--bf16");
  if (req.precision == plan::Precision::kFp8) {
    a.Add("--fp8-format", "hybrid");
    // The FP8 weights as the parameters (PlanRequest::fp8_param_gather); TE recipes only.
    if (req.fp8_transformer_engine && req.fp8_param_gather) a.Add("--fp8-param-gather");
  }
  AddMegatronNotes(req, lay, j, &out.notes);
  out.text = MegatronScript(req, lay, j, a, out.notes);
  return out;
}

}  // namespace infralens::io
