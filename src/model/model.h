// A decoder-only transformer, described by the fields that decide its parameter count, FLOPs and
// activation memory: dense (GPT, Llama), grouped-query attention, gated MLPs (SwiGLU), mixtures of
// experts (Mixtral, Qwen-MoE, DeepSeek) and DeepSeek's multi-head latent attention (MLA).
//
// Counts are exact integers (int64); FLOPs are doubles. Units are in the names: *_flops are
// floating-point operations (a multiply-add is 2), parameters are counts of scalars.
// Validate() bounds every field so that no count below can overflow.
#ifndef INFRALENS_MODEL_MODEL_H_
#define INFRALENS_MODEL_MODEL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace infralens::model {

struct Model {
  std::string name;    // preset name, or the config.json path it was read from
  std::string source;  // where the numbers come from (paper and table, or HF config)

  // Shape.
  int64_t num_layers = 0;    // l, transformer blocks
  int64_t hidden = 0;        // h, residual stream width
  int64_t ffn_hidden = 0;    // dense MLP inner width (intermediate_size)
  int64_t num_heads = 0;     // a, query heads
  int64_t num_kv_heads = 0;  // g, key/value heads (= a without GQA; ignored with MLA)
  int64_t head_dim = 0;      // d per head (usually h / a; ignored with MLA)
  int64_t vocab = 0;         // V
  int64_t seq_len = 0;       // default sequence length s for FLOPs and memory

  bool tied_embeddings = false;  // output layer shares the input embedding table
  bool gated_mlp = false;  // SwiGLU-style: gate, up and down matrices (3 h f) instead of 2 h f
  int64_t learned_positions = 0;  // rows of a learned position table (GPT-2/3); 0 with rotary
  bool layernorm = false;         // LayerNorm (weight and bias, 2h) instead of RMSNorm (h)
  bool qkv_bias = false;          // biases on the Q, K, V projections
  bool out_bias = false;          // bias on the attention output projection
  bool mlp_bias = false;          // biases on the MLP matrices (dense MLP only)

  // Positions, masking and regularisation: they change no parameter count, but they change what
  // an export must say to train the same model, and what the activations hold.
  // Rotary base (HF rope_theta, Megatron --rotary-base); 0 = no rotary (learned positions).
  double rope_theta = 0;
  // Dropout probabilities (HF attention_dropout / hidden_dropout, Megatron --attention-dropout /
  // --hidden-dropout). A model trained without dropout stores no dropout masks.
  double attention_dropout = 0;
  double hidden_dropout = 0;
  // Causal (decoder) self-attention: the upper triangle of the scores is masked, and fused
  // attention kernels skip it (FlashAttention-2, Dao 2023, sec. 3.1). false = bidirectional.
  bool causal = true;
  // Epsilon of every RMSNorm/LayerNorm (HF rms_norm_eps or layer_norm_eps, Megatron
  // --norm-epsilon, torchtitan norm_eps; all three default to 1e-5). DeepSeek-V3: 1e-6.
  double norm_eps = 1e-5;
  // RoPE frequency scaling (HF rope_scaling). rope_scaling "" = none; "llama3" (Llama 3.1: the
  // low-frequency bands divided by rope_factor, a smooth ramp between low_freq_factor and
  // high_freq_factor wavelengths of rope_original_context); "yarn", "linear", "dynamic" as HF
  // names them (factor and original context only).
  std::string rope_scaling;
  double rope_factor = 0;
  double rope_low_freq_factor = 0, rope_high_freq_factor = 0;
  int64_t rope_original_context = 0;
  // Per-head RMSNorm on queries and keys before attention (Qwen3 q_norm/k_norm; Megatron
  // --qk-layernorm). Its 2 d weights per layer are below the counts' resolution and not counted.
  bool qk_norm = false;
  // Sliding-window attention: each query sees the last `sliding_window` tokens (HF
  // sliding_window, Mistral/Qwen2; Megatron --window-size (left, 0)); 0 = full causal attention.
  // Causal models only: a bidirectional model's attention is counted whole.
  int64_t sliding_window = 0;
  // Which layers keep full attention when sliding_window > 0 (Megatron-Core
  // --window-attn-skip-freq N, megatron/core/transformer/transformer_config.py
  // window_attn_skip_freq; HF layer_types): with N > 0 the layers whose 1-based number is a
  // multiple of N (gpt-oss: N = 2, layers 2, 4, ... full and 1, 3, ... windowed); 0 = every layer
  // windowed.
  int64_t sliding_window_full_every = 0;

  // Mixture of experts. num_experts == 0: a dense model.
  int64_t num_experts = 0;               // routed experts per MoE layer
  int64_t top_k = 0;                     // routed experts per token
  int64_t expert_ffn_hidden = 0;         // inner width of one routed expert
  int64_t num_shared_experts = 0;        // experts every token goes through (DeepSeek, Qwen-MoE)
  int64_t shared_expert_ffn_hidden = 0;  // inner width of one shared expert
  // Which layers are MoE: layer i (0-based) is when i >= first_dense_layers and
  // (i + moe_layer_phase) % moe_layer_step == 0. DeepSeek: first_k_dense_replace, moe_layer_freq,
  // phase 0; Qwen-MoE: decoder_sparse_step with phase 1 ((i + 1) % step == 0).
  int64_t first_dense_layers = 0;
  int64_t moe_layer_step = 1;
  int64_t moe_layer_phase = 0;
  bool router_bias = false;         // a per-expert bias (DeepSeek-V3 e_score_correction_bias)
  bool shared_expert_gate = false;  // a sigmoid gate h -> 1 on the shared expert (Qwen-MoE)
  // Routing (HF scoring_func, routed_scaling_factor, n_group, topk_group; Megatron
  // --moe-router-score-function, --moe-router-topk-scaling-factor, --moe-router-num-groups,
  // --moe-router-group-topk). Softmax over the experts unless router_sigmoid; the chosen
  // experts' weights multiplied by router_scale (0 = not scaled); with router_groups > 0 the
  // experts are split into that many groups and a token picks among the best router_group_topk.
  bool router_sigmoid = false;
  double router_scale = 0;
  int64_t router_groups = 0, router_group_topk = 0;

  // Multi-head latent attention (DeepSeek-V2/V3). kv_lora_rank == 0: ordinary attention.
  int64_t q_lora_rank = 0;  // 0: queries projected directly from h
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  bool is_moe() const { return num_experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
};

// Activation recomputation (Korthikanti et al. 2022): none; selective (the attention core: QK^T,
// softmax, dropout, attention over V); full (everything but each layer's input); op-sac,
// torchtitan's op-level selective activation checkpointing (pytorch/torchtitan
// torchtitan/models/llama/parallelize_llama.py, `_save_list` and `_custom_policy`, commit
// 0596be3): per transformer block it saves the outputs of the fused attention, of the TP
// reduce-scatters and of every other matmul (the 1st, 3rd, 5th, ... in execution order) and
// recomputes the rest.
enum class Recompute { kNone, kSelective, kFull, kOpSac };
const char* RecomputeName(Recompute r);
StatusOr<Recompute> ParseRecompute(std::string_view name);

// What selective recomputation recomputes: Megatron-Core's --recompute-modules (NVIDIA/Megatron-LM
// megatron/core/transformer/transformer_config.py `recompute_modules`, default ["core_attn"]).
// core_attn: the attention core (Korthikanti et al. sec. 5); mlp: a dense layer's MLP, its fused
// norm included; moe: a MoE layer's router, dispatch, experts and combine; shared_experts: a MoE
// layer's shared experts; moe_act: the experts' activation function; layernorm: the norms that are
// their own module (MLA's input norm, a MoE layer's pre-MLP norm; Transformer Engine fuses the
// others into their linears); mla_up_proj: MLA's up projections and RoPE. core_attn, mlp, moe and
// shared_experts checkpoint their inputs; moe_act, layernorm and mla_up_proj discard their outputs
// after the forward and compute them again before the backward. Read only under
// Recompute::kSelective.
enum RecomputeModule : uint32_t {
  kRecomputeCoreAttn = 1u << 0,
  kRecomputeMlp = 1u << 1,
  kRecomputeMoe = 1u << 2,
  kRecomputeSharedExperts = 1u << 3,
  kRecomputeMoeAct = 1u << 4,
  kRecomputeLayernorm = 1u << 5,
  kRecomputeMlaUpProj = 1u << 6,
};
struct RecomputeModules {
  uint32_t bits = kRecomputeCoreAttn;
  bool has(RecomputeModule module) const { return (bits & module) != 0; }
  bool operator==(const RecomputeModules&) const = default;
};
// Megatron-Core's names, in its order, separated by spaces: "core_attn mlp".
std::string RecomputeModulesName(RecomputeModules modules);
// One or more of Megatron-Core's names separated by spaces or commas, each once: InvalidArgument
// naming the value and the names allowed otherwise (an empty list included).
StatusOr<RecomputeModules> ParseRecomputeModules(std::string_view value);

// InvalidArgument naming the first field that is missing, out of range or inconsistent.
Status Validate(const Model& m);

// Per-head widths: query/key width and value width (MLA has its own; otherwise head_dim).
int64_t QkHeadDim(const Model& m);
int64_t VHeadDim(const Model& m);
// Whether layer i (0-based) is a mixture-of-experts layer.
bool IsMoeLayer(const Model& m, int64_t layer);
int64_t NumMoeLayers(const Model& m);
// The expected number of distinct bins (nodes, or GPUs) one token's top_k routed experts land in
// when the num_experts experts are split in order into `bins` equal bins, under uniform routing
// (the force-balanced routing the published MoE benchmarks run; Megatron-Core's
// --moe-router-force-load-balancing). Group-limited routing (DeepSeek-V3 sec. 2.1.2, "node-limited
// routing"; config.json n_group, topk_group; Megatron's --moe-router-num-groups,
// --moe-router-group-topk) first picks router_group_topk of the router_groups groups, then top_k
// experts among them; groups are contiguous expert ranges, so a bin holds whole groups (groups %
// bins == 0) or a part of one (bins % groups == 0); other splits are taken as ungrouped. Exact
// (hypergeometric): bins x (1 - P(a given bin receives no expert)). 0 for a dense model or a bin
// count that does not divide the experts.
double ExpectedRoutedBins(const Model& m, int64_t bins);

// Parameters of one transformer layer, split by what parallelism does with them.
struct LayerParams {
  int64_t attention = 0;       // projections (+ biases, + MLA's latent norms)
  int64_t mlp = 0;             // dense MLP, or shared experts + router (+ shared-expert gate)
  int64_t routed_experts = 0;  // every routed expert (split over expert parallelism)
  int64_t active_routed = 0;   // the top_k routed experts a token goes through
  int64_t norms = 0;           // the two pre-attention / pre-MLP norms
  int64_t matmul_active = 0;   // matrix entries one token multiplies with (FLOPs = 2 x this)

  int64_t total() const { return attention + mlp + routed_experts + norms; }
  int64_t active() const { return attention + mlp + active_routed + norms; }
};
LayerParams DenseLayerParams(const Model& m);
// MLA's down projections and their latent norms (h x q_lora_rank + q_lora_rank, h x
// (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank), part of LayerParams::attention; 0 without MLA.
// Megatron-Core builds them whole on every tensor-parallel rank (gpt_layer_specs.py:
// linear_q_down_proj=backend.linear(), TELinear, which multi_latent_attention.py builds with
// parallel_mode='duplicated').
int64_t MlaDownProjectionParams(const Model& m);
// Under sequence parallelism, the weights of one layer that every tensor-parallel rank holds whole
// and applies to its own sequence shard, so each rank's gradient is a partial sum over the
// sequence that is summed over TP after the backward: the two norms and MLA's duplicated down
// projections (Megatron-Core: TE sets `sequence_parallel` on them, extensions/
// transformer_engine.py TELinear `parallel_mode == "duplicated"`, and distributed/
// finalize_model_grads.py `_allreduce_non_tensor_model_parallel_grads` all-reduces them).
int64_t SequenceParallelLayerParams(const Model& m);
// Values per token the all-gathers ahead of MLA's up projections carry under sequence parallelism:
// the query latent (q_lora_rank; the hidden state h when queries are projected directly), the
// key-value latent (kv_lora_rank), both after their norms, and the RoPE key (qk_rope_head_dim;
// Megatron-Core multi_latent_attention.py MLASelfAttention.get_query_key_value_tensors at
// NVIDIA/Megatron-LM 003b4ce: the duplicated down projections run on each rank's sequence shard,
// the column-parallel up projections gather their inputs, `gather_from_sequence_parallel_region`
// gathers k_pos_emb); 0 without MLA. DeepSeek-V3: 1,536 + 512 + 64 = 2,112 against h = 7,168.
int64_t MlaSequenceParallelGatherWidth(const Model& m);
// Of those, what the up projections gather again in the backward for their wgrad GEMMs (Transformer
// Engine's Linear and LayerNormLinear keep a column-parallel layer's input sharded under SP,
// `backward_input_needs_gather`): the two latents, not the RoPE key, whose gather is Megatron's
// own autograd function. DeepSeek-V3: 1,536 + 512 = 2,048; 0 without MLA.
int64_t MlaSequenceParallelRegatherWidth(const Model& m);
LayerParams MoeLayerParams(const Model& m);
LayerParams LayerParamsAt(const Model& m, int64_t layer);

struct ParamCounts {
  int64_t total = 0;
  int64_t embedding = 0;     // input token table V h, plus a learned position table
  int64_t output_layer = 0;  // V h when untied, else 0
  int64_t final_norm = 0;
  int64_t transformer = 0;     // all transformer layers
  int64_t routed_experts = 0;  // all routed experts of all layers (part of transformer)
  int64_t per_dense_layer = 0;
  int64_t per_moe_layer = 0;  // 0 for dense models
  int64_t num_dense_layers = 0;
  int64_t num_moe_layers = 0;
  // Parameters one token goes through: everything except the routed experts it is not sent to.
  // Includes the whole input embedding table (as Mixtral's "12.9B active" does); DeepSeek-V3's
  // "36.6B activated" excludes it (active - embedding).
  int64_t active = 0;
  int64_t matmul_active = 0;  // matrix entries per token incl. the output layer (tied or not)
};
ParamCounts CountParameters(const Model& m);

// Forward FLOPs per token at sequence length `seq`: 2 per matrix entry a token multiplies with
// (including the output layer), plus attention's sequence-dependent products QK^T and
// attention-over-V (ModelAttentionFlopsPerToken): half the score matrix for a causal model, as
// today's Megatron-LM counts them (megatron/training/training.py, num_floating_point_operations:
// "only half of the attention matrix is non-zero", average_ratio 0.5) and NeMo's FLOP calculator
// (causal_self_attn), and as fused kernels execute them. Narayanan et al. 2021 (eq. 3) and PaLM
// (App. B) counted the whole matrix: a bidirectional model's count (Model::causal false).
double ForwardFlopsPerToken(const Model& m, int64_t seq);
// QK^T and attention-over-V over the whole s x s matrix, 2 s a (d_qk + d_v) per layer and token:
// what materialised attention computes, causal or not.
double AttentionFlopsPerToken(const Model& m, int64_t seq);
// The part of ForwardFlopsPerToken that depends on the sequence: AttentionFlopsPerToken, halved
// for a causal model. A windowed layer (Model::sliding_window w < seq) counts the keys its mask
// leaves: query i sees min(i, w) of them, on average w - w^2 / (2 s) per token where a full
// causal layer sees s / 2 (the continuous form of both, as the causal half is counted).
double ModelAttentionFlopsPerToken(const Model& m, int64_t seq);
// Layers with a sliding window (0 when Model::sliding_window is 0): every layer but each
// sliding_window_full_every-th.
int64_t WindowedLayers(const Model& m);
// Average keys per query of a causal layer over `seq` tokens: seq / 2, or with a window of w < seq
// tokens, w - w^2 / (2 seq).
double CausalKeysPerQuery(int64_t seq, int64_t window);
// Training = forward + backward (2x forward) = 3x forward, the "6N" rule (Kaplan et al. 2020)
// with attention. Recomputation adds a forward of what it recomputes: full adds every
// transformer layer's forward (not the output layer), selective adds attention's s-dependent part.
double TrainingFlopsPerToken(const Model& m, int64_t seq, Recompute recompute = Recompute::kNone);
// The matmul FLOPs per token that torchtitan's op-level SAC runs again (Recompute::kOpSac): the
// unsaved even-numbered matmuls of each block, wk, wo and w3 (gated MLP) or w2, in every layer.
double OpSacRecomputeFlopsPerToken(const Model& m);
// One step: global_batch sequences of seq tokens.
double TrainingFlopsPerStep(const Model& m, int64_t seq, int64_t global_batch,
                            Recompute recompute = Recompute::kNone);

// Narayanan et al. SC21 ("Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM"), eq. 3: FLOPs per iteration of a GPT model with full activation recomputation,
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). A cross-check of TrainingFlopsPerStep for GPT shapes.
double MegatronSc21FlopsPerStep(int64_t batch, int64_t seq, int64_t layers, int64_t hidden,
                                int64_t vocab);

// One-line description of the architecture, e.g. "32 layers, hidden 4096, ...".
std::string ShapeSummary(const Model& m);

}  // namespace infralens::model

#endif  // INFRALENS_MODEL_MODEL_H_
