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

GemmKernel GemmKernelOnSms(const GemmKernel& g, int taken) {
  if (g.sms <= 0) return g;
  const int t = std::clamp(taken, 0, g.sms - 1);
  GemmKernel out = g;
  out.sms = g.sms - t;
  // The peak is the whole GPU's: the remaining SMs keep their share of it.
  out.peak_flops_per_s = g.peak_flops_per_s * out.sms / g.sms;
  return out;
}

double GemmTiles(const GemmKernel& g, const GemmShape& s) {
  const double tm = std::max(1.0, g.tile_m), tn = std::max(1.0, g.tile_n);
  return s.batch * std::ceil(s.m / tm) * std::ceil(s.n / tn);
}

namespace {

double WavesOf(const GemmKernel& g, double tiles) {
  return g.sms > 0 ? std::ceil(tiles / g.sms) : tiles;
}

// The tiles of the last, partly filled wave (0 when the waves are full or there is no SM count).
double TailTilesOf(const GemmKernel& g, double tiles) {
  return g.sms > 0 ? tiles - std::floor(tiles / g.sms) * g.sms : 0;
}

bool Empty(const GemmShape& s) { return s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0; }

// What the split trades, worked out once per shape: the waves' time falls with the split, the
// HBM traffic grows with it (gemm_time.h).
struct SplitTerms {
  int max_split = 1;
  double waves = 0, tail_tiles = 0, tiles = 0;
  double tm = 1, tn = 1, sm_rate = 0;
  double base_bytes = 0;  // operands and result, once

  SplitTerms(const GemmKernel& g, const GemmShape& s) {
    tiles = GemmTiles(g, s);
    waves = WavesOf(g, tiles);
    tail_tiles = TailTilesOf(g, tiles);
    max_split = tail_tiles > 0 ? static_cast<int>(std::floor(g.sms / tail_tiles)) : 1;
    tm = std::max(1.0, g.tile_m), tn = std::max(1.0, g.tile_n);
    // One SM's share of the peak (the whole peak with no SM count, where a "wave" is one tile).
    sm_rate = g.peak_flops_per_s / std::max(1, g.sms) * g.efficiency;
    base_bytes = s.batch * ((s.m * s.k + s.k * s.n) * g.input_bytes + s.m * s.n * g.output_bytes);
  }
  double TileSeconds(const GemmKernel& g, double k) const {
    return 2 * tm * tn * (k + g.k_half) / sm_rate;
  }
  double Compute(const GemmKernel& g, const GemmShape& s, int sp) const {
    if (sp == 1) return waves * TileSeconds(g, s.k);
    // The full waves as they are; the last wave's tiles split sp ways, still one wave.
    return (waves - 1) * TileSeconds(g, s.k) + TileSeconds(g, s.k / sp);
  }
  // Split-K: each slice of the last wave's tiles writes its FP32 partial tile and the reduction
  // reads them back (their share of the m x n output).
  double PartialBytesPerSplit(const GemmShape& s) const {
    return tail_tiles / tiles * s.batch * s.m * s.n * 4.0 * 2;
  }
  double Memory(const GemmKernel& g, const GemmShape& s, int sp) const {
    if (!(g.hbm_bytes_per_s > 0)) return 0;
    double bytes = base_bytes;
    if (sp > 1) bytes += PartialBytesPerSplit(s) * sp;
    return bytes / g.hbm_bytes_per_s;
  }
  int Clamp(int split) const { return std::clamp(split, 1, max_split); }
};

struct SplitChoice {
  int split = 1;
  double seconds = 0;
};

// The split in [1, max_split] of least max(compute, memory). For s >= 2 the compute time is
// A + B / s (falling) and the memory time C + D s (rising), so their maximum is least where they
// cross, s* = ((A - C) + sqrt((A - C)^2 + 4 B D)) / (2 D), or at the integer on either side of
// it; split 1 has no partials and is compared on its own. Ties go to the smaller split (fewer
// CTAs and partials for the same time).
SplitChoice FastestSplit(const GemmKernel& g, const GemmShape& s) {
  const SplitTerms t(g, s);
  auto time = [&](int sp) { return std::max(t.Compute(g, s, sp), t.Memory(g, s, sp)); };
  SplitChoice best{1, time(1)};
  if (t.max_split < 2) return best;
  auto consider = [&](int sp) {
    const double x = time(sp);
    if (x < best.seconds || (x == best.seconds && sp < best.split)) best = {sp, x};
  };
  const double b = 2 * t.tm * t.tn * s.k / t.sm_rate;  // B: compute(s) = A + B / s
  const double a = t.Compute(g, s, 2) - b / 2;
  const double d = g.hbm_bytes_per_s > 0 ? t.PartialBytesPerSplit(s) / g.hbm_bytes_per_s : 0;
  const double c = t.Memory(g, s, 2) - 2 * d;
  if (!(d > 0)) {
    consider(t.max_split);  // no traffic to trade: the most ways is the fastest
    return best;
  }
  const double cross = ((a - c) + std::sqrt((a - c) * (a - c) + 4 * b * d)) / (2 * d);
  if (!std::isfinite(cross)) {  // no rate to speak of (a zero peak): every split is as slow
    consider(t.max_split);
    return best;
  }
  const double lo = std::clamp(std::floor(cross), 2.0, static_cast<double>(t.max_split));
  consider(static_cast<int>(lo));
  if (lo < t.max_split) consider(static_cast<int>(lo) + 1);
  return best;
}

}  // namespace

double GemmWaves(const GemmKernel& g, const GemmShape& s) { return WavesOf(g, GemmTiles(g, s)); }

int GemmMaxSplit(const GemmKernel& g, const GemmShape& s) { return SplitTerms(g, s).max_split; }

double GemmComputeSeconds(const GemmKernel& g, const GemmShape& s, int split) {
  if (Empty(s)) return 0;
  const SplitTerms t(g, s);
  return t.Compute(g, s, t.Clamp(split));
}

double GemmMemorySeconds(const GemmKernel& g, const GemmShape& s, int split) {
  if (Empty(s)) return 0;
  const SplitTerms t(g, s);
  return t.Memory(g, s, t.Clamp(split));
}

int GemmSplitK(const GemmKernel& g, const GemmShape& s) {
  return Empty(s) ? 1 : FastestSplit(g, s).split;
}

double GemmSeconds(const GemmKernel& g, const GemmShape& s) {
  return Empty(s) ? 0 : FastestSplit(g, s).seconds;
}

std::vector<LinearGemm> LayerLinears(const model::Model& m, bool moe_layer, int tp, int ep,
                                     bool fused_projections) {
  const double t = std::max(1, tp);
  const double h = static_cast<double>(m.hidden), a = static_cast<double>(m.num_heads);
  // FC1 holds the gate and the up projection, fused; unfused each is a GEMM of its own.
  const double up = m.gated_mlp && fused_projections ? 2 : 1;
  const int fc1_parts = m.gated_mlp && !fused_projections ? 2 : 1;
  std::vector<LinearGemm> out;
  // A gated MLP's first GEMM(s): one of both widths, or the gate's and the up projection's.
  const auto fc1 = [&](std::string_view name, double width, double groups = 1, double rows = 1,
                       bool chunked = true) {
    for (int i = 0; i < fc1_parts; ++i) out.push_back({name, h, up * width, groups, rows, chunked});
  };
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
    if (fused_projections) {
      out.push_back({"qkv", h, (q + 2 * kv) / t});
    } else {
      for (double width : {q, kv, kv}) out.push_back({"qkv", h, width / t});
    }
    out.push_back({"proj", q / t, h});
  }
  if (!moe_layer || !m.is_moe()) {
    const double f = static_cast<double>(m.ffn_hidden);
    fc1("fc1", f / t);
    out.push_back({"fc2", f / t, h});
    return out;
  }
  // MoE layer (model.cc MoeLayerParams): the router (and a shared expert's gate) over every
  // token, the shared experts as one MLP of their summed width, the routed experts as a grouped
  // GEMM: this rank's experts / ep experts, each over ep x top_k / experts rows per token.
  const double experts = static_cast<double>(std::max<int64_t>(1, m.num_experts));
  out.push_back({"router", h, (experts + (m.shared_expert_gate ? 1 : 0)) / t, 1, 1, false, true});
  if (m.num_shared_experts > 0) {
    const double fs = static_cast<double>(m.num_shared_experts * m.shared_expert_ffn_hidden);
    fc1("shared_fc1", fs / t);
    out.push_back({"shared_fc2", fs / t, h});
  }
  const double fe = static_cast<double>(m.expert_ffn_hidden);
  const double e_ranks = std::max(1, ep);
  const double groups = experts / e_ranks;
  const double rows = e_ranks * static_cast<double>(m.top_k) / experts;
  fc1("expert_fc1", fe / t, groups, rows, false);
  out.push_back({"expert_fc2", fe / t, h, groups, rows, false});
  return out;
}

bool RowParallel(const LinearGemm& l) {
  return l.name == "proj" || l.name == "fc2" || l.name == "shared_fc2";
}

GemmTimes LinearGemmTimes(const GemmKernel& g, const std::vector<LinearGemm>& linears,
                          double tokens, TpOverlapChunks chunks, TpOverlapSmsTaken sms_taken) {
  GemmTimes r;
  // Transformer Engine's userbuffers names (transformer_engine/pytorch/module/base.py
  // initialize_ub: methods "pipeline" proj_fprop, fc2_fprop; "bulk" qkv_dgrad, qkv_wgrad,
  // fc1_dgrad, fc1_wgrad).
  const GemmKernel g_rs = GemmKernelOnSms(g, sms_taken.rs);
  const GemmKernel g_bulk = GemmKernelOnSms(g, sms_taken.bulk);
  for (const LinearGemm& l : linears) {
    const double rows = tokens * l.rows_per_token;
    const GemmShape whole{rows, l.n, l.k, l.groups};
    const bool row = RowParallel(l);
    const int fwd_c =
        !l.chunked_under_tp_overlap ? 1 : std::max(1, row ? chunks.scatter : chunks.gather);
    const int dgrad_c = l.chunked_under_tp_overlap && row ? std::max(1, chunks.gather) : 1;
    const GemmShape fwd_chunk{rows / fwd_c, l.n, l.k, l.groups};
    const GemmShape dgrad_chunk{rows / dgrad_c, l.n, l.k, l.groups};
    const bool rs = l.name == "proj" || l.name == "fc2";
    const bool bulk = l.name == "qkv" || l.name == "fc1";
    r.fwd_s += fwd_c * GemmSeconds(rs ? g_rs : g, fwd_chunk);
    r.dgrad_s += dgrad_c * GemmSeconds(bulk ? g_bulk : g, DgradShape(dgrad_chunk));
    r.wgrad_s += GemmSeconds(bulk ? g_bulk : g, WgradShape(whole));
    r.fwd_flops += GemmFlops(whole);
  }
  return r;
}

}  // namespace infralens::plan
