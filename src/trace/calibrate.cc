#include "trace/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "base/strings.h"
#include "base/table.h"
#include "base/units.h"
#include "plan/gemm_time.h"
#include "trace/analysis.h"

namespace infralens::trace {

namespace {

// ---------------------------------------------------------------------------------------------
// The args' JSON: small arrays of integers or strings, parsed by hand (they are bounded by
// kMaxShapeJsonBytes in the reader).

void SkipSpace(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\n' || s[*i] == '\t' || s[*i] == '\r')) ++*i;
}

bool Expect(std::string_view s, size_t* i, char c) {
  SkipSpace(s, i);
  if (*i >= s.size() || s[*i] != c) return false;
  ++*i;
  return true;
}

bool Peek(std::string_view s, size_t* i, char c) {
  SkipSpace(s, i);
  return *i < s.size() && s[*i] == c;
}

}  // namespace

bool ParseInputDims(std::string_view s, std::vector<std::vector<int64_t>>* dims) {
  dims->clear();
  size_t i = 0;
  if (!Expect(s, &i, '[')) return false;
  if (Peek(s, &i, ']')) return Expect(s, &i, ']') && (SkipSpace(s, &i), i == s.size());
  while (true) {
    std::vector<int64_t> d;
    if (!Expect(s, &i, '[')) return false;
    if (!Peek(s, &i, ']')) {
      while (true) {
        SkipSpace(s, &i);
        size_t j = i;
        while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '-')) ++j;
        auto v = ParseInt(s.substr(i, j - i));
        if (!v || *v < 0 || d.size() >= 16) return false;
        d.push_back(*v);
        i = j;
        if (Peek(s, &i, ',')) {
          ++i;
          continue;
        }
        break;
      }
    }
    if (!Expect(s, &i, ']')) return false;
    dims->push_back(std::move(d));
    if (dims->size() > 64) return false;
    if (Peek(s, &i, ',')) {
      ++i;
      continue;
    }
    break;
  }
  if (!Expect(s, &i, ']')) return false;
  SkipSpace(s, &i);
  return i == s.size();
}

bool ParseStringList(std::string_view s, std::vector<std::string>* out) {
  out->clear();
  size_t i = 0;
  if (!Expect(s, &i, '[')) return false;
  if (Peek(s, &i, ']')) return Expect(s, &i, ']');
  while (true) {
    if (!Expect(s, &i, '"')) return false;
    std::string v;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;  // kept verbatim: names need no unescaping
      v.push_back(s[i++]);
    }
    if (i >= s.size() || out->size() > 64) return false;
    ++i;
    out->push_back(std::move(v));
    if (Peek(s, &i, ',')) {
      ++i;
      continue;
    }
    break;
  }
  return Expect(s, &i, ']');
}

bool FitGemmKLoop(const std::vector<double>& k, const std::vector<double>& z, double* e,
                  double* k_half) {
  const size_t n = std::min(k.size(), z.size());
  std::vector<double> distinct(k.begin(), k.begin() + static_cast<long>(n));
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 2) return false;
  // z = a k + b with a = 1 / e, b = k_half / e; least squares in relative residuals
  // r_i = (a k_i + b) / z_i - 1 = a u_i + b v_i - 1 (u = k / z, v = 1 / z) is linear in (a, b):
  // the normal equations give it exactly.
  double uu = 0, uv = 0, vv = 0, su = 0, sv = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(k[i] > 0) || !(z[i] > 0)) return false;
    const double u = k[i] / z[i], v = 1 / z[i];
    uu += u * u, uv += u * v, vv += v * v, su += u, sv += v;
  }
  const double det = uu * vv - uv * uv;
  if (!(std::abs(det) > 0)) return false;
  const double a = (su * vv - sv * uv) / det, b = (sv * uu - su * uv) / det;
  if (!(a > 0) || !(b > 0) || !std::isfinite(a) || !std::isfinite(b)) return false;
  *e = 1 / a;
  *k_half = b / a;
  return true;
}

namespace {

// "c10::BFloat16" -> "bf16", "c10::Half" -> "bf16" (the same tensor-core rate on every preset:
// NVIDIA H100 and A100 datasheets list FP16 and BF16 together), "c10::Float8_e4m3fn" -> "fp8",
// "float" -> "fp32"; "" for anything else.
std::string GemmPrecision(std::string_view type) {
  const std::string t = ToLower(type);
  if (t.find("bfloat16") != std::string::npos || t.find("half") != std::string::npos) return "bf16";
  if (t.find("float8") != std::string::npos) return "fp8";
  if (t == "float") return "fp32";
  return "";
}

// Bytes per element of a profiler "Input type" ("c10::BFloat16", "float", "long int"); 0 for
// "Scalar", "" and unknown types.
int InputTypeBytes(std::string_view type) {
  std::string t = ToLower(type);
  if (t.rfind("c10::", 0) == 0) t = t.substr(5);
  if (t == "long int") t = "long";
  if (t == "unsigned char") t = "uint8";
  if (t == "signed char") t = "int8";
  return DtypeBytes(t);
}

int64_t Numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) {
    if (x > (int64_t{1} << 40) / std::max<int64_t>(n, 1)) return -1;  // absurd: refused
    n *= x;
  }
  return n;
}

bool IsBoolTrue(const std::vector<std::string>& concrete, size_t i) {
  return i < concrete.size() && ToLower(Trim(concrete[i])) == "true";
}

struct AttentionOpInfo {
  std::string_view name;
  std::string_view backend;
  bool backward;
  bool bshd;         // query laid out [B, S, H, D] (the kernel-level ops) instead of [B, H, S, D]
  size_t query;      // index of the query among the inputs (backward ops take grad_out first)
  size_t is_causal;  // index of is_causal among the inputs
};

// The argument order of each operator (aten/src/ATen/native/native_functions.yaml).
constexpr AttentionOpInfo kAttentionOps[] = {
    {"aten::_scaled_dot_product_flash_attention", "flash", false, false, 0, 4},
    {"aten::_scaled_dot_product_flash_attention_backward", "flash", true, false, 1, 11},
    {"aten::_scaled_dot_product_efficient_attention", "efficient", false, false, 0, 6},
    {"aten::_scaled_dot_product_efficient_attention_backward", "efficient", true, false, 1, 11},
    {"aten::_scaled_dot_product_cudnn_attention", "cudnn", false, false, 0, 6},
    {"aten::_scaled_dot_product_cudnn_attention_backward", "cudnn", true, false, 1, 14},
    {"aten::_flash_attention_forward", "flash", false, true, 0, 8},
    {"aten::_flash_attention_backward", "flash", true, true, 1, 11},
};

// One operator with its shapes and the kernel time joined to it.
struct JoinedOp {
  const ShapedOp* op;
  const RankTrace* trace;
  double kernel_us = 0;
};

enum class Made { kSample, kUnusable, kIgnored };

Made MakeGemm(const JoinedOp& j, const std::string& name, const CalibrationOptions& o,
              Calibration* c) {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;
  if (!ParseInputDims(j.op->input_dims, &dims) || !ParseStringList(j.op->input_types, &types))
    return Made::kUnusable;
  GemmSample s;
  s.op = name;
  size_t a = 0;  // index of the left operand
  std::vector<int64_t> A, B;
  if (name == "aten::addmm" || name == "aten::baddbmm") a = 1;  // (self, mat1, mat2, ...)
  if (dims.size() < a + 2) return Made::kUnusable;
  A = dims[a];
  B = dims[a + 1];
  if (name == "aten::linear") {
    // linear(input [..., K], weight [N, K], bias): M is every leading dimension of the input.
    if (A.empty() || B.size() != 2 || A.back() != B[1]) return Made::kUnusable;
    s.k = A.back();
    s.n = B[0];
    s.m = Numel(std::vector<int64_t>(A.begin(), A.end() - 1));
  } else if (name == "aten::bmm" || name == "aten::baddbmm") {
    if (A.size() != 3 || B.size() != 3 || A[0] != B[0] || A[2] != B[1]) return Made::kUnusable;
    s.batch = A[0], s.m = A[1], s.k = A[2], s.n = B[2];
  } else {  // mm, addmm, _scaled_mm: [M, K] x [K, N]
    if (A.size() != 2 || B.size() != 2 || A[1] != B[0]) return Made::kUnusable;
    s.m = A[0], s.k = A[1], s.n = B[1];
  }
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return Made::kUnusable;
  s.precision = a < types.size() ? GemmPrecision(types[a]) : "";
  if (s.precision.empty()) return Made::kIgnored;
  // 2 M N K: one multiply and one add per term (NVIDIA Deep Learning Performance Guide, Matrix
  // Multiplication Background, "Math and Memory Bounds"); the bias's M N adds are left out.
  s.flops = 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.m) *
            static_cast<double>(s.n) * static_cast<double>(s.k);
  s.kernel_us = j.kernel_us;
  const double peak = s.precision == "bf16"  ? o.gpu.bf16_flops_per_s
                      : s.precision == "fp8" ? o.gpu.fp8_flops_per_s
                                             : 0;
  s.efficiency = peak > 0 ? s.flops / (s.kernel_us * 1e-6 * peak) : 0;
  c->gemm.push_back(std::move(s));
  return Made::kSample;
}

Made MakeAttention(const JoinedOp& j, const AttentionOpInfo& info, const CalibrationOptions& o,
                   Calibration* c) {
  std::vector<std::vector<int64_t>> dims;
  if (!ParseInputDims(j.op->input_dims, &dims)) return Made::kUnusable;
  std::vector<std::string> concrete;
  if (!j.op->concrete_inputs.empty()) ParseStringList(j.op->concrete_inputs, &concrete);
  if (dims.size() < info.query + 2) return Made::kUnusable;
  const auto& q = dims[info.query];
  const auto& k = dims[info.query + 1];
  if (q.size() != 4 || k.size() != 4) return Made::kUnusable;
  AttentionSample s;
  s.op = std::string(info.name);
  s.backend = std::string(info.backend);
  s.backward = info.backward;
  s.batch = q[0];
  s.heads = info.bshd ? q[2] : q[1];
  s.seq_q = info.bshd ? q[1] : q[2];
  s.seq_k = info.bshd ? k[1] : k[2];
  s.head_dim = q[3];
  if (s.batch <= 0 || s.heads <= 0 || s.seq_q <= 0 || s.seq_k <= 0 || s.head_dim <= 0)
    return Made::kUnusable;
  s.causal = IsBoolTrue(concrete, info.is_causal);
  // Forward: two matmuls of 2 Sq Sk D FLOPs per head, 4 B H Sq Sk D; a causal mask skips half of
  // the score matrix; backward 2.5x forward (Dao 2023, FlashAttention-2, Section 4.1: "the
  // backward pass FLOPs are 2.5x the forward pass FLOPs").
  double f = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) *
             static_cast<double>(s.seq_q) * static_cast<double>(s.seq_k) *
             static_cast<double>(s.head_dim);
  if (s.causal) f *= 0.5;
  if (s.backward) f *= 2.5;
  s.flops = f;
  s.kernel_us = j.kernel_us;
  s.efficiency =
      o.gpu.bf16_flops_per_s > 0 ? s.flops / (s.kernel_us * 1e-6 * o.gpu.bf16_flops_per_s) : 0;
  c->attention.push_back(std::move(s));
  return Made::kSample;
}

Made MakeHbm(const JoinedOp& j, const std::string& name, const CalibrationOptions& o,
             Calibration* c) {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;
  if (!ParseInputDims(j.op->input_dims, &dims) || !ParseStringList(j.op->input_types, &types))
    return Made::kUnusable;
  // Every tensor input is read once; the output (the largest input, broadcast) is written once.
  // copy_(self, src) reads src and writes self: its two inputs are exactly the bytes moved.
  double read = 0, largest = 0;
  int first_bytes = 0;
  for (size_t i = 0; i < dims.size() && i < types.size(); ++i) {
    const int eb = InputTypeBytes(types[i]);
    if (eb == 0 || dims[i].empty()) continue;
    const int64_t n = Numel(dims[i]);
    if (n < 0) return Made::kUnusable;
    if (first_bytes == 0) first_bytes = eb;
    read += static_cast<double>(n) * eb;
    largest = std::max(largest, static_cast<double>(n));
  }
  if (read <= 0) return Made::kIgnored;
  HbmSample s;
  s.op = name;
  s.bytes = name == "aten::copy_" ? read : read + largest * first_bytes;
  s.kernel_us = j.kernel_us;
  s.efficiency =
      o.gpu.hbm_bytes_per_s > 0 ? s.bytes / (s.kernel_us * 1e-6 * o.gpu.hbm_bytes_per_s) : 0;
  s.in_fit = s.bytes >= o.min_hbm_bytes && s.efficiency > 0;
  c->hbm.push_back(std::move(s));
  return Made::kSample;
}

// The ranks in a "Process Group Ranks" string "[0, 1, 2]".
std::vector<int64_t> ParseRanks(const std::string& s) {
  std::vector<int64_t> out;
  std::string_view t = Trim(s);
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') return out;
  for (std::string_view part : Split(t.substr(1, t.size() - 2), ',')) {
    auto v = ParseInt(Trim(part));
    if (!v) return {};
    out.push_back(*v);
  }
  return out;
}

void AddCollectives(const RankTrace& t, const CalibrationOptions& o, Calibration* c) {
  for (const GpuEvent& g : t.gpu) {
    if (g.collective < 0 || g.dur_us <= 0) continue;
    const CollectiveMeta& m = t.collectives[static_cast<size_t>(g.collective)];
    CollectiveSample s;
    s.kind = NormalizeCollectiveKind(m.name, t.names.Get(g.name));
    const int eb = DtypeBytes(m.dtype);
    const int64_t nelems = std::max(m.in_nelems, m.out_nelems);
    const std::vector<int64_t> ranks = ParseRanks(m.pg_ranks);
    s.group_size = m.group_size > 0 ? m.group_size : static_cast<int64_t>(ranks.size());
    const double factor = BusBandwidthFactor(s.kind, s.group_size);
    if (eb <= 0 || nelems <= 0 || factor < 0 || s.group_size < 2) continue;
    s.bytes = static_cast<double>(nelems) * eb;
    s.kernel_us = g.dur_us;
    // nccl-tests' bus bandwidth (doc/PERFORMANCE.md): algbw = bytes / time, busbw = algbw x factor.
    s.busbw_bytes_per_s = s.bytes / (g.dur_us * 1e-6) * factor;
    // The link class: ranks are placed rank-contiguously (torchrun's order, cluster/cluster.h),
    // so a group stays on the scale-up fabric when all its ranks share one scale-up domain.
    // The domain is the cluster's node when one is given, else the GPU's scale-up domain.
    const int64_t domain =
        o.cluster != nullptr ? o.cluster->node.gpus_per_node : o.gpu.scaleup_domain_gpus;
    s.link = "unknown";
    if (!ranks.empty() && domain > 0) {
      const int64_t dom = ranks[0] / domain;
      s.link = std::all_of(ranks.begin(), ranks.end(), [&](int64_t r) { return r / domain == dom; })
                   ? "scale-up"
                   : "scale-out";
    }
    c->collectives.push_back(std::move(s));
  }
}

// Joins each shaped operator of `t` to the kernels it launched; returns the kernel time per op.
std::vector<double> JoinKernels(const RankTrace& t, Calibration* c) {
  std::vector<double> kernel_us(t.shaped_ops.size(), 0);
  if (t.shaped_ops.empty()) return kernel_us;
  std::unordered_map<int64_t, size_t> by_external;
  for (size_t i = 0; i < t.shaped_ops.size(); ++i) {
    if (t.shaped_ops[i].external_id >= 0) by_external.emplace(t.shaped_ops[i].external_id, i);
  }
  // Operators per thread, by start (for the join by time).
  std::unordered_map<int64_t, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < t.shaped_ops.size(); ++i) by_tid[t.shaped_ops[i].tid].push_back(i);
  for (auto& [tid, v] : by_tid) {
    std::stable_sort(v.begin(), v.end(), [&](size_t a, size_t b) {
      return t.shaped_ops[a].ts_us < t.shaped_ops[b].ts_us;
    });
  }
  auto contains = [&](size_t i, const Launch& l) {
    const ShapedOp& op = t.shaped_ops[i];
    return op.tid == l.tid && op.ts_us <= l.ts_us && l.ts_us <= op.ts_us + op.dur_us;
  };
  std::unordered_map<int64_t, size_t> op_of_correlation;
  std::vector<bool> by_time(t.shaped_ops.size(), false);
  for (const Launch& l : t.launches) {
    size_t found = SIZE_MAX;
    if (auto it = by_external.find(l.external_id);
        it != by_external.end() && contains(it->second, l))
      found = it->second;
    bool timed = false;
    if (found == SIZE_MAX) {
      auto it = by_tid.find(l.tid);
      if (it == by_tid.end()) continue;
      const auto& v = it->second;
      // The innermost operator holding the launch: the latest-starting one that still contains
      // it (operators nest; a few siblings may have ended in between).
      auto ub = std::upper_bound(v.begin(), v.end(), l.ts_us,
                                 [&](double ts, size_t i) { return ts < t.shaped_ops[i].ts_us; });
      for (int steps = 0; ub != v.begin() && steps < 16; ++steps) {
        --ub;
        if (contains(*ub, l)) {
          found = *ub;
          timed = true;
          break;
        }
      }
    }
    if (found == SIZE_MAX) continue;
    op_of_correlation.emplace(l.correlation, found);
    if (timed) by_time[found] = true;
  }
  for (const GpuEvent& g : t.gpu) {
    if (g.cat != GpuCat::kKernel || g.correlation < 0) continue;
    auto it = op_of_correlation.find(g.correlation);
    if (it != op_of_correlation.end()) kernel_us[it->second] += g.dur_us;
  }
  for (size_t i = 0; i < by_time.size(); ++i) c->joined_by_time += by_time[i] ? 1 : 0;
  return kernel_us;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void SetResiduals(CurveFit* f, const std::vector<double>& model, const std::vector<double>& obs) {
  double ss = 0, mx = 0;
  for (size_t i = 0; i < obs.size(); ++i) {
    const double r = model[i] / obs[i] - 1;
    ss += r * r;
    mx = std::max(mx, std::abs(r));
  }
  f->rms_residual = obs.empty() ? 0 : std::sqrt(ss / static_cast<double>(obs.size()));
  f->max_residual = mx;
}

// A one-value curve: the value that reproduces the samples' total time (what the planner sums).
CurveFit FitConstant(plan::EfficiencyQuantity q, std::string name, double default_value,
                     const std::vector<double>& work, const std::vector<double>& seconds,
                     double peak, int min_samples) {
  CurveFit f;
  f.quantity = q;
  f.name = std::move(name);
  f.samples = static_cast<int>(work.size());
  f.default_value = default_value;
  f.value = default_value;
  if (f.samples < min_samples || peak <= 0) {
    f.note = fmt::format("{} samples < {}: default kept", f.samples, min_samples);
    return f;
  }
  double w = 0, s = 0;
  for (size_t i = 0; i < work.size(); ++i) w += work[i], s += seconds[i];
  const double v = w / (s * peak);
  if (!(v >= plan::kMinEfficiencyFraction) || v > 1) {
    f.note = fmt::format("measured {:.3g} is outside [{:g}, 1]: default kept", v,
                         plan::kMinEfficiencyFraction);
    return f;
  }
  f.value = v;
  f.fitted = true;
  f.note = "total work / (peak x total time)";
  std::vector<double> model(work.size(), v), obs(work.size());
  for (size_t i = 0; i < work.size(); ++i) obs[i] = work[i] / (seconds[i] * peak);
  SetResiduals(&f, model, obs);
  return f;
}

// The planner's GEMM model (plan/gemm_time.h) inverted: a compute-bound kernel of W waves whose
// last wave's k-loops are split s ways took t = [(W - 1)(k + k_half) + k / s + k_half] x
// 2 Tm Tn S / (peak e), so z = t peak / (2 Tm Tn S W) = (x + k_half) / e with
// x = k (W - 1 + 1 / s) / W, a line in x whose slope and intercept give e and k_half. The tiles
// and SM count are the defaults' (`def`, `gpu`), the HBM rate the calibration's (`hbm`: fitted,
// or the default). Kernels the model puts on the memory floor, or within a factor of 2 of it, say
// little about the k-loop and are left out of the fit.
//
// Which kernels those are, and the split s of each (plan::GemmSplitK, the fastest), depend on e
// and k_half: they start from the defaults' and are taken again from the fitted values until
// neither moves (a fixed point, at most 8 rounds), so the fit inverts the very model that will
// time these shapes and keeps the kernels that model puts clear of the floor. With defaults near
// the answer one refit settles it: compute-bound at a split of 2 or more, the fastest split is
// the most ways (the compute time falls with every way, one more way adds at most the memory
// time of the split before it, under half the compute time), so the splits of the kernels kept
// move only when e or k_half moves by about a factor of 2.
void FitGemm(const std::string& precision, const hw::Gpu& gpu, const plan::DeviceEfficiency& def,
             double hbm, int min_samples, Calibration* c) {
  plan::GemmKernel g = plan::GemmKernelFor(gpu, def, precision == "fp8");
  g.hbm_bytes_per_s = hbm * gpu.hbm_bytes_per_s;
  const double tile_flops = 2 * std::max(1.0, g.tile_m) * std::max(1.0, g.tile_n);
  std::vector<plan::GemmShape> shapes;
  std::vector<double> z, eff;
  for (const GemmSample& s : c->gemm) {
    if (s.precision != precision || !(s.efficiency > 0)) continue;
    const plan::GemmShape shape{static_cast<double>(s.m), static_cast<double>(s.n),
                                static_cast<double>(s.k), static_cast<double>(s.batch)};
    shapes.push_back(shape);
    z.push_back(s.kernel_us * 1e-6 * g.peak_flops_per_s /
                (tile_flops * std::max(1, g.sms) * plan::GemmWaves(g, shape)));
    eff.push_back(s.efficiency);
  }
  // The kernels `kernel` keeps (more than a factor of 2 above its memory floor, at its split:
  // near the floor a kernel's time says too little about its k-loop, and a fitted e could move it
  // across the ridge) and each one's wave-average k-loop x at that split.
  struct Kept {
    std::vector<size_t> index;
    std::vector<double> x, z;
    int memory_bound = 0;
    bool operator==(const Kept& o) const { return index == o.index && x == o.x; }
  };
  auto keep = [&](const plan::GemmKernel& kernel) {
    Kept k;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int split = plan::GemmSplitK(kernel, shapes[i]);
      if (2 * plan::GemmMemorySeconds(kernel, shapes[i], split) >=
          plan::GemmComputeSeconds(kernel, shapes[i], split)) {
        ++k.memory_bound;
        continue;
      }
      const double waves = plan::GemmWaves(kernel, shapes[i]);
      k.index.push_back(i);
      k.x.push_back(shapes[i].k * (waves - 1 + 1.0 / split) / waves);
      k.z.push_back(z[i]);
    }
    return k;
  };
  CurveFit e, h;
  e.quantity = plan::EfficiencyQuantity::kGemm;
  h.quantity = plan::EfficiencyQuantity::kGemmHalfDim;
  e.name = "gemm", h.name = "gemm_half_dim";
  e.precision = h.precision = precision;
  e.default_value = e.value = def.gemm;
  h.default_value = h.value = def.gemm_half_dim;
  Kept kept = keep(g);
  auto skipped = [&] {
    return kept.memory_bound > 0
               ? fmt::format(" ({} at or near the memory floor left out)", kept.memory_bound)
               : std::string();
  };
  // One round: e and k_half from the kept kernels (or e alone, k_half at its default).
  auto fit = [&] {
    e.fitted = h.fitted = false;
    e.value = def.gemm, h.value = def.gemm_half_dim;
    if (double ev, hv;
        FitGemmKLoop(kept.x, kept.z, &ev, &hv) && ev >= plan::kMinEfficiencyFraction && ev <= 1) {
      e.value = ev, h.value = hv;
      e.fitted = h.fitted = true;
      e.note = h.note =
          "least squares on the planner's tile-and-wave model: time per wave = "
          "tile FLOPs x (k + k_half) / (SM rate x e), at the model's fastest split" +
          skipped();
      return;
    }
    // One x only (or no positive fit): 1 / e = sum(f_i) / sum(f_i^2),
    // f_i = (x_i + k_half) / z_i, least squares in relative terms.
    double num = 0, den = 0;
    for (size_t i = 0; i < kept.x.size(); ++i) {
      const double f = (kept.x[i] + h.value) / kept.z[i];
      num += f, den += f * f;
    }
    const double v = num > 0 ? den / num : 0;
    if (v >= plan::kMinEfficiencyFraction && v <= 1) {
      e.value = v;
      e.fitted = true;
      e.note = "fewer than 2 distinct k-loop lengths: e fitted, k_half default kept" + skipped();
    } else {
      e.note = fmt::format("no fit in [{:g}, 1]: default kept{}", plan::kMinEfficiencyFraction,
                           skipped());
    }
    h.note = "fewer than 2 distinct k-loop lengths (or no fit): default kept";
  };
  plan::GemmKernel fitted = g;
  if (static_cast<int>(kept.index.size()) < min_samples) {
    e.note = h.note =
        fmt::format("{} samples < {}: default kept{}", kept.index.size(), min_samples, skipped());
  } else {
    Kept used = kept;  // the kernels the last fitted values rest on
    for (int round = 0; round < 8; ++round) {
      const CurveFit last_e = e, last_h = h;
      fit();
      if (!e.fitted) {
        if (round > 0) e = last_e, h = last_h, kept = used;  // the last round's fit stands
        break;
      }
      used = kept;
      fitted.efficiency = e.value;
      fitted.k_half = h.value;
      Kept next = keep(fitted);
      if (next == kept || static_cast<int>(next.index.size()) < min_samples || round == 7) break;
      kept = std::move(next);
    }
  }
  e.samples = h.samples = static_cast<int>(kept.index.size());
  if (e.fitted) {
    std::vector<double> model, obs;
    for (size_t i : kept.index) {
      model.push_back(plan::GemmFlops(shapes[i]) /
                      (plan::GemmSeconds(fitted, shapes[i]) * g.peak_flops_per_s));
      obs.push_back(eff[i]);
    }
    SetResiduals(&e, model, obs);
    if (h.fitted) h.rms_residual = e.rms_residual, h.max_residual = e.max_residual;
  }
  c->fits.push_back(std::move(e));
  c->fits.push_back(std::move(h));
}

// Each BF16 and FP8 sample's efficiency as the planner's GEMM model (plan::GemmSeconds) puts it,
// at the calibrated constants (`fits`: fitted, or the default kept) and at the defaults, with
// the split the calibrated model runs: what the measurement page plots beside the samples.
void SetGemmModel(const hw::Gpu& gpu, const plan::DeviceEfficiency& bf16,
                  const plan::DeviceEfficiency& fp8, Calibration* c) {
  auto value = [&](std::string_view name, std::string_view precision) {
    for (const CurveFit& f : c->fits) {
      if (f.name == name && f.precision == precision) return f.value;
    }
    return 0.0;
  };
  for (const bool is_fp8 : {false, true}) {
    if (is_fp8 && !(gpu.fp8_flops_per_s > 0)) continue;
    const std::string precision = is_fp8 ? "fp8" : "bf16";
    plan::DeviceEfficiency calibrated = is_fp8 ? fp8 : bf16;
    const plan::GemmKernel defaults = plan::GemmKernelFor(gpu, calibrated, is_fp8);
    calibrated.gemm = value("gemm", precision);
    calibrated.gemm_half_dim = value("gemm_half_dim", precision);
    calibrated.hbm = value("hbm", "");
    const plan::GemmKernel model = plan::GemmKernelFor(gpu, calibrated, is_fp8);
    for (GemmSample& s : c->gemm) {
      if (s.precision != precision) continue;
      const plan::GemmShape shape{static_cast<double>(s.m), static_cast<double>(s.n),
                                  static_cast<double>(s.k), static_cast<double>(s.batch)};
      const double flops = plan::GemmFlops(shape);
      const double t = plan::GemmSeconds(model, shape), t0 = plan::GemmSeconds(defaults, shape);
      s.model_efficiency = t > 0 ? flops / (t * model.peak_flops_per_s) : 0;
      s.default_efficiency = t0 > 0 ? flops / (t0 * defaults.peak_flops_per_s) : 0;
      s.split = plan::GemmSplitK(model, shape);
    }
  }
}

// The message-size bands of the bus bandwidth table: powers of 4 from 1 KiB ([1 KiB, 4 KiB) is
// band 0), at most band 20; -1 below 1 KiB.
int SizeBand(double bytes) {
  if (bytes < 1024) return -1;
  int band = 0;
  double lo = 1024;
  while (bytes >= lo * 4 && band < 20) lo *= 4, ++band;
  return band;
}
double BandMinBytes(int band) { return band < 0 ? 0 : 1024 * std::pow(4.0, band); }

void MakeBands(Calibration* c) {
  struct Key {
    std::string kind, link;
    int64_t n;
    int band;
    bool operator==(const Key& o) const {
      return kind == o.kind && link == o.link && n == o.n && band == o.band;
    }
  };
  std::vector<std::pair<Key, std::vector<double>>> groups;
  for (const CollectiveSample& s : c->collectives) {
    Key k{s.kind, s.link, s.group_size, SizeBand(s.bytes)};
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == k; });
    if (it == groups.end()) {
      groups.push_back({k, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(s.busbw_bytes_per_s);
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.kind, a.first.link, a.first.n, a.first.band) <
           std::tie(b.first.kind, b.first.link, b.first.n, b.first.band);
  });
  for (const auto& [k, v] : groups) {
    CollectiveBand b;
    b.kind = k.kind, b.link = k.link, b.group_size = k.n;
    b.min_bytes = BandMinBytes(k.band);
    b.max_bytes = k.band < 0 ? 1024 : b.min_bytes * 4;
    b.samples = static_cast<int>(v.size());
    b.median_busbw_bytes_per_s = Median(v);
    b.max_busbw_bytes_per_s = *std::max_element(v.begin(), v.end());
    c->bands.push_back(std::move(b));
  }
}

// The links' efficiencies (calibrate.h): per link class, the median bus bandwidth of the large
// all_reduce / all_gather / reduce_scatter kernels over the link's rate per GPU per direction.
void FitLinks(const cluster::Cluster& cl, int min_samples, Calibration* c) {
  // 64 MiB: nccl-tests' bus bandwidth has flattened by then on NVLink and InfiniBand (its
  // PERFORMANCE.md sweeps); 16 MiB the smallest fallback band (DDP's default 25 MB bucket).
  constexpr double kLarge = 64.0 * 1024 * 1024, kSmallestFallback = 16.0 * 1024 * 1024;
  const cluster::NodeSpec& n = cl.node;
  struct Link {
    plan::EfficiencyQuantity q;
    const char* name;
    const char* link;
    double rate, default_value;
  };
  const Link links[] = {{plan::EfficiencyQuantity::kScaleUpLink, "scale_up_link", "scale-up",
                         n.scale_up_bytes_per_s, n.scale_up_efficiency},
                        {plan::EfficiencyQuantity::kScaleOutLink, "scale_out_link", "scale-out",
                         n.nics_per_node * n.nic_bytes_per_s / n.gpus_per_node, n.nic_efficiency}};
  for (const Link& l : links) {
    std::vector<const CollectiveSample*> pool;
    double largest = 0;
    for (const CollectiveSample& s : c->collectives) {
      if (s.link != l.link ||
          (s.kind != "all_reduce" && s.kind != "all_gather" && s.kind != "reduce_scatter"))
        continue;
      pool.push_back(&s);
      largest = std::max(largest, s.bytes);
    }
    // The band the samples come from: >= 64 MiB, else the largest of MakeBands' bands, if it is
    // at least 16 MiB.
    const bool fallback = largest < kLarge;
    const double lo = fallback ? BandMinBytes(SizeBand(largest)) : kLarge;
    std::vector<double> busbw;
    if (lo >= kSmallestFallback) {
      for (const CollectiveSample* s : pool) {
        if (s->bytes >= lo) busbw.push_back(s->busbw_bytes_per_s);
      }
    }
    CurveFit f;
    f.quantity = l.q;
    f.name = l.name;
    f.samples = static_cast<int>(busbw.size());
    f.default_value = f.value = l.default_value;
    const std::string band =
        fallback ? fmt::format("{}-{} (none of >= 64 MiB)", FormatBytes(static_cast<int64_t>(lo)),
                               FormatBytes(static_cast<int64_t>(lo * 4)))
                 : std::string(">= 64 MiB");
    if (f.samples < min_samples) {
      f.note = fmt::format(
          "{} {} all_reduce/all_gather/reduce_scatter samples of {} < {}: {}'s "
          "value kept",
          f.samples, l.link, lo >= kSmallestFallback ? band : ">= 16 MiB", min_samples, cl.name);
      c->fits.push_back(std::move(f));
      continue;
    }
    const double median = Median(busbw);
    const double v = median / l.rate;
    if (!(v >= plan::kMinEfficiencyFraction) || v > 1) {
      f.note = fmt::format("measured {:.3g} is outside [{:g}, 1]: {}'s value kept", v,
                           plan::kMinEfficiencyFraction, cl.name);
      c->fits.push_back(std::move(f));
      continue;
    }
    f.value = v;
    f.fitted = true;
    f.note = fmt::format(
        "median busbw {:.1f} GB/s of {} messages / {:.1f} GB/s per GPU per direction ({})",
        median / 1e9, band, l.rate / 1e9, cl.name);
    std::vector<double> model(busbw.size(), median);
    SetResiduals(&f, model, busbw);
    c->fits.push_back(std::move(f));
  }
}

std::string Percent1(double x) { return fmt::format("{:.1f}%", 100 * x); }

std::string FilesText(const std::vector<std::string>& files) {
  std::vector<std::string> shown;
  for (size_t i = 0; i < files.size() && i < 3; ++i) shown.push_back(files[i]);
  std::string s = Join(shown, " ");
  if (files.size() > 3) s += fmt::format(" and {} more", files.size() - 3);
  // A path is user text: one line, whatever it holds (it also lands in a comment line).
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return s;
}

std::string CsvQuote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    if (ch == '\n' || ch == '\r') ch = ' ';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

Status CheckShapesRecorded(const std::vector<RankTrace>& traces) {
  int64_t shaped = 0, without = 0;
  for (const RankTrace& t : traces) {
    shaped += static_cast<int64_t>(t.shaped_ops.size());
    without += t.calib_ops_without_shapes;
  }
  if (shaped > 0) return Status::Ok();
  return FailedPrecondition(fmt::format(
      "no shapes recorded: profile with record_shapes=True ({} GEMM/attention/streaming "
      "operators without shapes in {} file{})",
      without, traces.size(), traces.size() == 1 ? "" : "s"));
}

StatusOr<Calibration> Calibrate(const std::vector<RankTrace>& traces, const CalibrationOptions& o) {
  if (o.min_samples < 1 || o.min_samples > 1'000'000) {
    return InvalidArgument(
        fmt::format("‹min_samples› {}: expected an integer in [1, 1000000]", o.min_samples));
  }
  if (!(o.gpu.bf16_flops_per_s > 0) || !(o.gpu.hbm_bytes_per_s > 0))
    return InvalidArgument("calibrate: the GPU has no BF16 peak or HBM bandwidth");
  Calibration c;
  c.gpu = o.gpu.name;
  for (const RankTrace& t : traces) {
    c.files.push_back(t.path);
    c.shaped_ops += static_cast<int64_t>(t.shaped_ops.size());
    c.ops_without_shapes += t.calib_ops_without_shapes;
    const std::vector<double> kernel_us = JoinKernels(t, &c);
    for (size_t i = 0; i < t.shaped_ops.size(); ++i) {
      const ShapedOp& op = t.shaped_ops[i];
      if (!(kernel_us[i] > 0)) {
        ++c.ops_without_kernels;
        continue;
      }
      JoinedOp j{&op, &t, kernel_us[i]};
      const std::string& name = t.names.Get(op.name);
      Made made = Made::kIgnored;
      const AttentionOpInfo* att = nullptr;
      for (const auto& a : kAttentionOps) {
        if (a.name == name) att = &a;
      }
      if (att != nullptr) {
        made = MakeAttention(j, *att, o, &c);
      } else if (name == "aten::add" || name == "aten::add_" || name == "aten::mul" ||
                 name == "aten::mul_" || name == "aten::copy_") {
        made = MakeHbm(j, name, o, &c);
      } else {
        made = MakeGemm(j, name, o, &c);
      }
      if (made == Made::kUnusable) ++c.ops_unusable;
    }
    AddCollectives(t, o, &c);
  }
  RETURN_IF_ERROR(CheckShapesRecorded(traces));
  const plan::EfficiencyTable& table =
      o.defaults != nullptr ? *o.defaults : plan::EfficiencyTable::Builtin();
  const plan::DeviceEfficiency bf16 = table.For(o.gpu, plan::Precision::kBf16);
  const plan::DeviceEfficiency fp8 = table.For(o.gpu, plan::Precision::kFp8);
  // The HBM rate first: the GEMM model's memory floor and split use it.
  CurveFit hbm_fit;
  {
    std::vector<double> w, s;
    for (const HbmSample& h : c.hbm) {
      if (h.in_fit) w.push_back(h.bytes), s.push_back(h.kernel_us * 1e-6);
    }
    hbm_fit = FitConstant(plan::EfficiencyQuantity::kHbm, "hbm", bf16.hbm, w, s,
                          o.gpu.hbm_bytes_per_s, o.min_samples);
    if (!hbm_fit.fitted)
      hbm_fit.note += fmt::format(" (streaming kernels of >= {:g} MB only)", o.min_hbm_bytes / 1e6);
  }
  FitGemm("bf16", o.gpu, bf16, hbm_fit.value, o.min_samples, &c);
  if (o.gpu.fp8_flops_per_s > 0) FitGemm("fp8", o.gpu, fp8, hbm_fit.value, o.min_samples, &c);
  // Each sample's FLOPs are weighed to the planner's 8k-key equivalent (plan::AttentionSeqScale
  // at the table's half-rate key length), so the fitted constant is the one the planner states:
  // a kernel measured over 2k keys counts as if it had run at 8k.
  for (const auto& [backend, q, qname, def, half] :
       {std::tuple{"cudnn", plan::EfficiencyQuantity::kAttention, "attention", bf16.attention,
                   bf16.attention_half_seq},
        std::tuple{"flash", plan::EfficiencyQuantity::kAttentionFa2, "attention_fa2",
                   bf16.attention_fa2, bf16.attention_fa2_half_seq}}) {
    std::vector<double> w, s;
    for (const AttentionSample& a : c.attention) {
      if (a.backend != backend) continue;
      w.push_back(a.flops / plan::AttentionSeqScale(static_cast<double>(a.seq_k), half));
      s.push_back(a.kernel_us * 1e-6);
    }
    c.fits.push_back(FitConstant(q, qname, def, w, s, o.gpu.bf16_flops_per_s, o.min_samples));
  }
  c.fits.push_back(std::move(hbm_fit));
  SetGemmModel(o.gpu, bf16, fp8, &c);
  MakeBands(&c);
  if (o.cluster != nullptr) {
    c.cluster = o.cluster->name;
    FitLinks(*o.cluster, o.min_samples, &c);
  } else {
    c.notes.push_back(o.no_cluster_note);
  }
  return c;
}

StatusOr<TraceGpu> GpuFromTraces(const std::vector<RankTrace>& traces) {
  std::optional<TraceGpu> found;
  for (const RankTrace& t : traces) {
    for (const DeviceProperties& d : t.devices) {
      auto g = hw::GpuForDeviceName(d.name, d.total_global_mem_bytes);
      if (!g.ok()) {
        return InvalidArgument(
            fmt::format("{}: deviceProperties: {}", t.path, g.status().message()));
      }
      if (!found) {
        found = TraceGpu{*g, d.name, t.path};
      } else if (found->gpu.name != g->name) {
        return InvalidArgument(
            fmt::format("the traces name different GPUs: '{}' ({}, in {}) and '{}' ({}, in {})",
                        found->device_name, found->gpu.name, found->file, d.name, g->name, t.path));
      }
    }
  }
  if (!found) {
    return InvalidArgument(fmt::format("no deviceProperties in {} trace file{} to name the GPU",
                                       traces.size(), traces.size() == 1 ? "" : "s"));
  }
  return *found;
}

std::string CalibrationCsv(const Calibration& c) {
  std::string out = fmt::format(
      "# Efficiency constants calibrated by `infralens trace calibrate` for {} from {}.\n"
      "# Use with `infralens plan --efficiency FILE` (also memory, explain, worksheet, "
      "validate).\n",
      c.gpu, FilesText(c.files));
  std::vector<std::string> kept, links_kept;
  for (const CurveFit& f : c.fits) {
    const bool link = f.quantity == plan::EfficiencyQuantity::kScaleUpLink ||
                      f.quantity == plan::EfficiencyQuantity::kScaleOutLink;
    if (!f.fitted)
      (link ? links_kept : kept)
          .push_back(f.precision.empty() ? f.name : f.name + " " + f.precision);
  }
  if (!kept.empty()) {
    out +=
        fmt::format("# Kept at the built-in defaults (too few samples): {}.\n", Join(kept, ", "));
  }
  if (!links_kept.empty()) {
    out += fmt::format("# Kept at cluster {}'s values (too few samples or none in range): {}.\n",
                       c.cluster, Join(links_kept, ", "));
  }
  for (const std::string& n : c.notes) out += "# " + n + "\n";
  out += "gpu,quantity,precision,value,source\n";
  for (const CurveFit& f : c.fits) {
    if (!f.fitted) continue;
    const std::string source =
        fmt::format("calibrated from {} samples in {}, residual rms {} max {} ({})", f.samples,
                    FilesText(c.files), Percent1(f.rms_residual), Percent1(f.max_residual), f.note);
    out +=
        fmt::format("{},{},{},{:.6g},{}\n", c.gpu, f.name, f.precision, f.value, CsvQuote(source));
  }
  return out;
}

std::string CalibrationText(const Calibration& c) {
  std::string out = fmt::format(
      "calibration for {} from {} file{}: {} operators with shapes ({} joined by time), {} "
      "without kernels, {} unusable; {} without shapes\n",
      c.gpu, c.files.size(), c.files.size() == 1 ? "" : "s", c.shaped_ops, c.joined_by_time,
      c.ops_without_kernels, c.ops_unusable, c.ops_without_shapes);
  int fp32 = 0;
  for (const GemmSample& g : c.gemm) fp32 += g.precision == "fp32" ? 1 : 0;
  const int hbm_small = static_cast<int>(
      std::count_if(c.hbm.begin(), c.hbm.end(), [](auto& h) { return !h.in_fit; }));
  out += fmt::format(
      "samples: {} GEMM ({} FP32, reported only), {} attention, {} streaming ({} too small to "
      "fit), {} collective\n\n",
      c.gemm.size(), fp32, c.attention.size(), c.hbm.size(), hbm_small, c.collectives.size());
  TextTable t({"curve", "samples", "value", "default", "rms resid", "max resid", "note"});
  t.SetAlign(6, TextTable::Align::kLeft);
  for (const CurveFit& f : c.fits) {
    const bool dim = f.quantity == plan::EfficiencyQuantity::kGemmHalfDim;
    auto v = [&](double x) { return dim ? fmt::format("{:.1f}", x) : fmt::format("{:.3f}", x); };
    t.AddRow({f.precision.empty() ? f.name : f.name + " " + f.precision, std::to_string(f.samples),
              f.fitted ? v(f.value) : "-", v(f.default_value),
              f.fitted ? Percent1(f.rms_residual) : "-", f.fitted ? Percent1(f.max_residual) : "-",
              f.note});
  }
  out += t.Render();
  for (const std::string& n : c.notes) out += "note: " + n + "\n";
  if (fp32 > 0) {
    std::vector<double> tf;
    for (const GemmSample& g : c.gemm) {
      if (g.precision == "fp32") tf.push_back(g.flops / (g.kernel_us * 1e-6) / 1e12);
    }
    out += fmt::format(
        "\nFP32 GEMMs: median {:.2f} TFLOP/s, best {:.2f} (the planner models BF16 and FP8 only)\n",
        Median(tf), *std::max_element(tf.begin(), tf.end()));
  }
  if (!c.bands.empty()) {
    out +=
        "\ncollective bus bandwidth (nccl-tests' definition; the large all_reduce, all_gather "
        "and reduce_scatter give scale_up_link and scale_out_link above)\n";
    TextTable b({"kind", "link", "ranks", "size", "samples", "median GB/s", "best GB/s"});
    b.SetAlign(1, TextTable::Align::kLeft);
    for (const CollectiveBand& x : c.bands) {
      const std::string size =
          x.min_bytes == 0 ? "< 1 KiB"
                           : fmt::format("{}-{}", FormatBytes(static_cast<int64_t>(x.min_bytes)),
                                         FormatBytes(static_cast<int64_t>(x.max_bytes)));
      b.AddRow({x.kind, x.link, std::to_string(x.group_size), size, std::to_string(x.samples),
                fmt::format("{:.1f}", x.median_busbw_bytes_per_s / 1e9),
                fmt::format("{:.1f}", x.max_busbw_bytes_per_s / 1e9)});
    }
    out += b.Render();
  }
  return out;
}

void WriteCalibrationJson(JsonWriter& w, const Calibration& c) {
  w.BeginObject();
  w.Field("gpu", c.gpu);
  w.Field("files", c.files);
  w.Field("shaped_ops", c.shaped_ops);
  w.Field("ops_without_shapes", c.ops_without_shapes);
  w.Field("ops_without_kernels", c.ops_without_kernels);
  w.Field("ops_unusable", c.ops_unusable);
  w.Field("joined_by_time", c.joined_by_time);
  w.Field("cluster", c.cluster);  // "" when no cluster gave the links' rates
  w.Field("notes", c.notes);
  w.Key("fits").BeginArray();
  for (const CurveFit& f : c.fits) {
    w.BeginObject();
    w.Field("quantity", f.name);
    w.Field("precision", f.precision);
    w.Field("samples", f.samples);
    w.Field("fitted", f.fitted);
    w.Field("value", f.value);
    w.Field("default", f.default_value);
    w.Field("rms_residual", f.rms_residual);
    w.Field("max_residual", f.max_residual);
    w.Field("note", f.note);
    w.EndObject();
  }
  w.EndArray();
  w.Key("gemm").BeginArray();
  for (const GemmSample& s : c.gemm) {
    w.BeginObject();
    w.Field("op", s.op);
    w.Field("batch", s.batch);
    w.Field("m", s.m);
    w.Field("n", s.n);
    w.Field("k", s.k);
    w.Field("precision", s.precision);
    w.Field("flops", s.flops);
    w.Field("kernel_us", s.kernel_us);
    w.Field("efficiency", s.efficiency);
    w.Field("model_efficiency", s.model_efficiency);
    w.Field("default_efficiency", s.default_efficiency);
    w.Field("split", s.split);
    w.EndObject();
  }
  w.EndArray();
  w.Key("attention").BeginArray();
  for (const AttentionSample& s : c.attention) {
    w.BeginObject();
    w.Field("op", s.op);
    w.Field("backend", s.backend);
    w.Field("batch", s.batch);
    w.Field("heads", s.heads);
    w.Field("seq_q", s.seq_q);
    w.Field("seq_k", s.seq_k);
    w.Field("head_dim", s.head_dim);
    w.Field("causal", s.causal);
    w.Field("backward", s.backward);
    w.Field("flops", s.flops);
    w.Field("kernel_us", s.kernel_us);
    w.Field("efficiency", s.efficiency);
    w.EndObject();
  }
  w.EndArray();
  w.Key("hbm").BeginArray();
  for (const HbmSample& s : c.hbm) {
    w.BeginObject();
    w.Field("op", s.op);
    w.Field("bytes", s.bytes);
    w.Field("kernel_us", s.kernel_us);
    w.Field("efficiency", s.efficiency);
    w.Field("in_fit", s.in_fit);
    w.EndObject();
  }
  w.EndArray();
  w.Key("collectives").BeginArray();
  for (const CollectiveBand& b : c.bands) {
    w.BeginObject();
    w.Field("kind", b.kind);
    w.Field("link", b.link);
    w.Field("group_size", b.group_size);
    w.Field("min_bytes", b.min_bytes);
    w.Field("max_bytes", b.max_bytes);
    w.Field("samples", b.samples);
    w.Field("median_busbw_bytes_per_s", b.median_busbw_bytes_per_s);
    w.Field("max_busbw_bytes_per_s", b.max_busbw_bytes_per_s);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace infralens::trace
