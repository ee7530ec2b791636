#include "plan/gemm_time.h"

#include <algorithm>
#include <cmath>

namespace infralens::plan {

GemmKernel GemmKernelFor(const hw::Gpu& gpu, const DeviceEfficiency& e, bool fp8) {
  GemmKernel g;
  const bool has_fp8 = fp8 && gpu.fp8_flops_per_s > 0;
  g.sms = gpu.sms;
  g.peak_flops_per_s = has_fp8 ? gpu.fp8_flops_per_s : gpu.bf16_flops_per_s;
  g.efficiency = e.gemm;
  g.k_half = e.gemm_half_dim;
  g.tile_m = e.gemm_tile_m;
  g.tile_n = e.gemm_tile_n;
  g.hbm_bytes_per_s = e.hbm * gpu.hbm_bytes_per_s;
  g.input_bytes = has_fp8 ? 1 : 2;
  g.output_bytes = 2;
  return g;
}

double GemmTiles(const GemmKernel& g, const GemmShape& s) {
  const double tm = std::max(1.0, g.tile_m), tn = std::max(1.0, g.tile_n);
  return s.batch * std::ceil(s.m / tm) * std::ceil(s.n / tn);
}

double GemmWaves(const GemmKernel& g, const GemmShape& s) {
  const double tiles = GemmTiles(g, s);
  return g.sms > 0 ? std::ceil(tiles / g.sms) : tiles;
}

namespace {

// The tiles of the last, partly filled wave (0 when the waves are full or there is no SM count).
double TailTiles(const GemmKernel& g, const GemmShape& s) {
  if (g.sms <= 0) return 0;
  const double tiles = GemmTiles(g, s);
  return tiles - std::floor(tiles / g.sms) * g.sms;
}

}  // namespace

int GemmMaxSplit(const GemmKernel& g, const GemmShape& s) {
  const double tail = TailTiles(g, s);
  return tail > 0 ? static_cast<int>(std::floor(g.sms / tail)) : 1;
}

double GemmComputeSeconds(const GemmKernel& g, const GemmShape& s, int split) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return 0;
  const double tm = std::max(1.0, g.tile_m), tn = std::max(1.0, g.tile_n);
  // One SM's share of the peak (the whole peak with no SM count, where a "wave" is one tile).
  const double sm_rate = g.peak_flops_per_s / std::max(1, g.sms) * g.efficiency;
  auto tile_s = [&](double k) { return 2 * tm * tn * (k + g.k_half) / sm_rate; };
  const int sp = std::clamp(split, 1, GemmMaxSplit(g, s));
  if (sp == 1) return GemmWaves(g, s) * tile_s(s.k);
  // The full waves as they are; the last wave's tiles split sp ways, still one wave.
  return (GemmWaves(g, s) - 1) * tile_s(s.k) + tile_s(s.k / sp);
}

double GemmMemorySeconds(const GemmKernel& g, const GemmShape& s, int split) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0 || !(g.hbm_bytes_per_s > 0)) return 0;
  double bytes = s.batch * ((s.m * s.k + s.k * s.n) * g.input_bytes + s.m * s.n * g.output_bytes);
  // Split-K: each slice of the last wave's tiles writes its FP32 partial tile and the reduction
  // reads them back (their share of the m x n output).
  const int sp = std::clamp(split, 1, GemmMaxSplit(g, s));
  if (sp > 1) {
    const double share = TailTiles(g, s) / GemmTiles(g, s);
    bytes += share * s.batch * s.m * s.n * 4.0 * 2 * sp;
  }
  return bytes / g.hbm_bytes_per_s;
}

int GemmSplitK(const GemmKernel& g, const GemmShape& s) { return GemmMaxSplit(g, s); }

double GemmSeconds(const GemmKernel& g, const GemmShape& s) {
  const int split = GemmSplitK(g, s);
  return std::max(GemmComputeSeconds(g, s, split), GemmMemorySeconds(g, s, split));
}

std::vector<LinearGemm> LayerLinears(const model::Model& m, bool moe_layer, int tp, int ep) {
  const double t = std::max(1, tp);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.num_heads);
  const double up = m.gated_mlp ? 2 : 1;  // FC1 holds the gate and the up projection
  std::vector<LinearGemm> out;
  // Attention (model.cc AttentionParams): column-parallel projections in, row-parallel out.
  if (m.is_mla()) {
    // MLA (DeepSeek-V2 sec. 2.1): the down projections and the up projections of q and kv, each
    // split over tp as the FLOP count splits them.
    const double dqk = static_cast<double>(model::QkHeadDim(m));
    const double dv = static_cast<double>(m.v_head_dim);
    const double q_lora = static_cast<double>(m.q_lora_rank);
    const double kv_lora = static_cast<double>(m.kv_lora_rank);
    if (m.q_lora_rank > 0) {
      out.push_back({"q_down", h, q_lora / t});
      out.push_back({"q_up", q_lora, a * dqk / t});
    } else {
      out.push_back({"q", h, a * dqk / t});
    }
    out.push_back({"kv_down", h, (kv_lora + static_cast<double>(m.qk_rope_head_dim)) / t});
    out.push_back({"kv_up", kv_lora, a * (static_cast<double>(m.qk_nope_head_dim) + dv) / t});
    out.push_back({"proj", a * dv / t, h});
  } else {
    const double q = a * static_cast<double>(m.head_dim);
    const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
    out.push_back({"qkv", h, (q + 2 * kv) / t});
    out.push_back({"proj", q / t, h});
  }
  if (!moe_layer || !m.is_moe()) {
    const double f = static_cast<double>(m.ffn_hidden);
    out.push_back({"fc1", h, up * f / t});
    out.push_back({"fc2", f / t, h});
    return out;
  }
  // MoE layer (model.cc MoeLayerParams): the router (and a shared expert's gate) over every
  // token, the shared experts as one MLP of their summed width, the routed experts as a grouped
  // GEMM: this rank's experts / ep experts, each over ep x top_k / experts rows per token.
  const double experts = static_cast<double>(std::max<int64_t>(1, m.num_experts));
  out.push_back({"router", h, (experts + (m.shared_expert_gate ? 1 : 0)) / t, 1, 1, true, true});
  if (m.num_shared_experts > 0) {
    const double fs = static_cast<double>(m.num_shared_experts * m.shared_expert_ffn_hidden);
    out.push_back({"shared_fc1", h, up * fs / t});
    out.push_back({"shared_fc2", fs / t, h});
  }
  const double fe = static_cast<double>(m.expert_ffn_hidden);
  const double e_ranks = std::max(1, ep);
  const double groups = experts / e_ranks;
  const double rows = e_ranks * static_cast<double>(m.top_k) / experts;
  out.push_back({"expert_fc1", h, up * fe / t, groups, rows, false});
  out.push_back({"expert_fc2", fe / t, h, groups, rows, false});
  return out;
}

GemmTimes LinearGemmTimes(const GemmKernel& g, const std::vector<LinearGemm>& linears,
                          double tokens, int chunks) {
  GemmTimes r;
  for (const LinearGemm& l : linears) {
    const double rows = tokens * l.rows_per_token;
    const GemmShape whole{rows, l.n, l.k, l.groups};
    const int c = l.chunked_under_tp_overlap ? std::max(1, chunks) : 1;
    const GemmShape chunk{rows / c, l.n, l.k, l.groups};
    r.fwd_s += c * GemmSeconds(g, chunk);
    r.dgrad_s += c * GemmSeconds(g, DgradShape(chunk));
    r.wgrad_s += GemmSeconds(g, WgradShape(whole));
    r.fwd_flops += GemmFlops(whole);
  }
  return r;
}

}  // namespace infralens::plan
