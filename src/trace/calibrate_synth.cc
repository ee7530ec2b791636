#include "trace/calibrate_synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "plan/gemm_time.h"
#include "trace/analysis.h"

namespace infralens::trace {

Status CheckShapesSynthOptions(const ShapesSynthOptions& o) {
  const model::Model& m = o.model;
  if (o.tp < 1 || o.tp > 64)
    return InvalidArgument(fmt::format("‹tp› {}: expected an integer in [1, 64]", o.tp));
  if (m.num_heads <= 0 || m.hidden <= 0 || m.ffn_hidden <= 0 || m.head_dim <= 0)
    return InvalidArgument(
        fmt::format("‹model› {}: needs a dense attention and MLP shape", m.name));
  const int64_t kv = m.num_kv_heads > 0 ? m.num_kv_heads : m.num_heads;
  if (m.num_heads % o.tp != 0 || kv % o.tp != 0 || m.ffn_hidden % o.tp != 0) {
    return InvalidArgument(
        fmt::format("‹tp› {}: must divide {}'s {} heads, {} KV heads and MLP width {}", o.tp,
                    m.name, m.num_heads, kv, m.ffn_hidden));
  }
  if (o.repeats < 1 || o.repeats > 100'000)
    return InvalidArgument(
        fmt::format("‹repeats› {}: expected an integer in [1, 100000]", o.repeats));
  if (o.tokens.empty()) return InvalidArgument("record-shapes synth: no token counts");
  for (int64_t t : o.tokens) {
    if (t < 1 || t > (int64_t{1} << 20))
      return InvalidArgument(fmt::format("token count {}: expected [1, 1048576]", t));
  }
  if (!(o.curves.gemm > 0) || !(o.curves.gemm_half_dim > 0) || !(o.curves.attention_fa2 > 0) ||
      !(o.curves.hbm > 0)) {
    return InvalidArgument("record-shapes synth: every efficiency curve must be positive");
  }
  if (o.dp < 1 || o.dp > 64)
    return InvalidArgument(fmt::format("dp {}: expected an integer in [1, 64]", o.dp));
  if (o.gpus_per_node < 1 || o.gpus_per_node > 1024)
    return InvalidArgument(fmt::format("gpus per node {}: expected [1, 1024]", o.gpus_per_node));
  for (double e : {o.scale_up_link, o.scale_out_link}) {
    if (!(e > 0) || e > 1)
      return InvalidArgument(fmt::format("link efficiency {}: expected a number in (0, 1]", e));
  }
  if (!(o.scale_up_bytes_per_s >= 0) || !(o.scale_up_bytes_per_s < 1e15) ||
      !(o.scale_out_bytes_per_s > 0) || !(o.scale_out_bytes_per_s < 1e15)) {
    return InvalidArgument("record-shapes synth: link rates must be positive and finite");
  }
  return Status::Ok();
}

namespace {

// cuBLAS's SM90 kernel naming (as H100 traces show it); the name plays no part in calibration.
constexpr const char* kGemmKernel =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas";

class Emitter {
 public:
  explicit Emitter(const ShapesSynthOptions& o) : o_(o) {}

  // One CPU operator, its cudaLaunchKernel and the kernel of `kernel_us`; the CPU runs ahead.
  void Op(const std::string& name, const std::string& dims, const std::string& types,
          const std::string& concrete, const char* kernel, double kernel_us,
          const std::string& kernel_args = "", int stream = 7) {
    const int64_t ext = next_ext_++, corr = next_corr_++;
    const double cpu_dur = 10;
    fmt::format_to(std::back_inserter(out_),
                   R"J(,
{{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "Input Dims": {}, "Input type": {}, "Concrete Inputs": {}}}}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 4.000, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}},
{{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": {}, "correlation": {}{}}}}})J",
                   name, cpu_ts_, cpu_dur, ext, dims, types, concrete, cpu_ts_ + 2, ext, corr,
                   kernel, stream, gpu_ts_, kernel_us, ext, stream, corr, kernel_args);
    cpu_ts_ += cpu_dur + 1;
    gpu_ts_ = std::max(gpu_ts_, cpu_ts_) + kernel_us + 1;
  }

  void Gemm(const std::string& name, int64_t m, int64_t k, int64_t n) {
    // The planner's time for this shape (plan/gemm_time.h) under the curves, BF16; the tiles are
    // the built-in table's where the curves give none.
    plan::DeviceEfficiency e = o_.curves;
    const plan::DeviceEfficiency builtin =
        plan::EfficiencyTable::Builtin().For(o_.gpu, plan::Precision::kBf16);
    if (!(e.gemm_tile_m > 0)) e.gemm_tile_m = builtin.gemm_tile_m;
    if (!(e.gemm_tile_n > 0)) e.gemm_tile_n = builtin.gemm_tile_n;
    const double us = plan::GemmSeconds(plan::GemmKernelFor(o_.gpu, e, false),
                                        {static_cast<double>(m), static_cast<double>(n),
                                         static_cast<double>(k)}) *
                      1e6;
    if (name == "aten::addmm") {
      Op(name, fmt::format("[[{}], [{}, {}], [{}, {}], [], []]", n, m, k, k, n),
         R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])",
         R"(["", "", "", "1", "1"])", kGemmKernel, us);
    } else {
      Op(name, fmt::format("[[{}, {}], [{}, {}]]", m, k, k, n),
         R"(["c10::BFloat16", "c10::BFloat16"])", R"(["", ""])", kGemmKernel, us);
    }
  }

  void Attention(int64_t s, int64_t heads, int64_t d) {
    // Executed FLOPs: 4 B H S^2 D, halved by the causal mask, backward 2.5x (trace/calibrate.h).
    const double fwd = 4.0 * static_cast<double>(heads) * static_cast<double>(s) *
                       static_cast<double>(s) * static_cast<double>(d) * 0.5;
    // The kernel's rate over s keys (plan::AttentionSeqScale; attention_fa2 is stated over 8k).
    const double rate =
        o_.gpu.bf16_flops_per_s * o_.curves.attention_fa2 *
        plan::AttentionSeqScale(static_cast<double>(s), o_.curves.attention_fa2_half_seq);
    const std::string q = fmt::format("[1, {}, {}, {}]", heads, s, d);
    Op("aten::_scaled_dot_product_flash_attention",
       fmt::format("[{}, {}, {}, [], [], [], []]", q, q, q),
       R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", ""])",
       R"(["", "", "", "0.", "True", "False", ""])",
       "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
       "false, cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>"
       "(pytorch_flash::Flash_fwd_params)",
       fwd / rate * 1e6);
    const std::string lse = fmt::format("[1, {}, {}]", heads, s);
    Op("aten::_scaled_dot_product_flash_attention_backward",
       fmt::format("[{}, {}, {}, {}, {}, {}, [], [], [], [], [], [], [], [], []]", q, q, q, q, q,
                   lse),
       R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "float", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "long int", "long int", ""])",
       R"(["", "", "", "", "", "", "", "", "4096", "4096", "0.", "True", "", "", ""])",
       "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<"
       "128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, true, true, false, false, "
       "false, false, false>(pytorch_flash::Flash_bwd_params)",
       2.5 * fwd / rate * 1e6);
  }

  void Add(int64_t t, int64_t h) {
    // Reads two [t, h] BF16 tensors and writes one: 3 t h 2 bytes.
    const double bytes = 3.0 * static_cast<double>(t) * static_cast<double>(h) * 2;
    const double us = bytes / (o_.gpu.hbm_bytes_per_s * o_.curves.hbm) * 1e6;
    Op("aten::add", fmt::format("[[{}, {}], [{}, {}], []]", t, h, t, h),
       R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])", R"(["", "", "1"])",
       "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::"
       "BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
       "std::array<char*, 3ul>)",
       us);
  }

  void AllReduce(int64_t t, int64_t h) {
    const double up =
        o_.scale_up_bytes_per_s > 0 ? o_.scale_up_bytes_per_s : o_.gpu.scaleup_bytes_per_s;
    Collective("allreduce", "all_reduce", t * h, o_.tp, 1, "1", "tp", o_.scale_up_link * up);
  }

  // The data-parallel gradients' collectives of `nelems` BF16 elements (the whole buffer).
  void DataParallel(int64_t nelems) {
    const double busbw = o_.scale_out_link * o_.scale_out_bytes_per_s;
    for (const auto& [name, kind] : {std::pair{"allreduce", "all_reduce"},
                                     {"_allgather_base", "all_gather"},
                                     {"_reduce_scatter_base", "reduce_scatter"}}) {
      Collective(name, kind, nelems, o_.dp, o_.gpus_per_node, "2", "dp", busbw);
    }
  }

  // One NCCL kernel of a group of `n` ranks `stride` apart, whose bus bandwidth is `busbw`:
  // time = bytes x factor / busbw, bytes = nelems x 2 (BF16), factor nccl-tests'
  // (doc/PERFORMANCE.md: 2 (n - 1) / n for all_reduce, (n - 1) / n for all_gather and
  // reduce_scatter, whose nelems is the whole buffer: out for all_gather, in for reduce_scatter).
  void Collective(const char* name, const std::string& kind, int64_t nelems, int n, int stride,
                  const char* pg, const char* desc, double busbw) {
    const double bytes = static_cast<double>(nelems) * 2;
    const double us = bytes * BusBandwidthFactor(kind, n) / busbw * 1e6;
    std::string ranks = "[";
    for (int r = 0; r < n; ++r) ranks += fmt::format("{}{}", r ? ", " : "", int64_t{r} * stride);
    ranks += "]";
    const int64_t in = kind == "all_gather" ? nelems / n : nelems;
    const int64_t out = kind == "reduce_scatter" ? nelems / n : nelems;
    const char* kernel = kind == "all_reduce"   ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
                         : kind == "all_gather" ? "ncclDevKernel_AllGather_RING_LL"
                                                : "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL";
    // PyTorch's collective metadata on the kernel (libkineto/src/output_json.cpp).
    const std::string meta = fmt::format(
        R"J(, "Collective name": "{}", "In msg nelems": {}, "Out msg nelems": {}, "Group size": {}, "dtype": "BFloat16", "Process Group Name": "{}", "Process Group Description": "{}", "Process Group Ranks": "{}")J",
        name, in, out, n, pg, desc, ranks);
    Op("record_param_comms", "[[]]", R"([""])", R"([""])",
       fmt::format("{}(ncclDevKernelArgsStorage<4096ul>)", kernel).c_str(), us, meta, 20);
  }

  std::string Finish() {
    const std::string head = fmt::format(
        R"J({{"schemaVersion": 1, "record_shapes": 1, "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": {}}},
"traceEvents": [
{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.000, "dur": {:.3f}, "args": {{"External id": 1}}}})J",
        o_.tp, std::max(cpu_ts_, gpu_ts_) + 1);
    return head + out_ + "\n]}\n";
  }

 private:
  const ShapesSynthOptions& o_;
  std::string out_;
  double cpu_ts_ = 1, gpu_ts_ = 1;
  int64_t next_ext_ = 2, next_corr_ = 100000;
};

}  // namespace

StatusOr<std::string> ShapesTraceJson(const ShapesSynthOptions& o) {
  RETURN_IF_ERROR(CheckShapesSynthOptions(o));
  const model::Model& m = o.model;
  const int64_t tp = o.tp, h = m.hidden, dh = m.head_dim;
  const int64_t a = m.num_heads, g = m.num_kv_heads > 0 ? m.num_kv_heads : m.num_heads;
  const int64_t f = m.ffn_hidden * (m.gated_mlp ? 2 : 1);
  Emitter e(o);
  for (int r = 0; r < o.repeats; ++r) {
    for (int64_t t : o.tokens) {
      // Megatron's tensor-parallel split (Shoeybi et al. 2019, Section 3): QKV and MLP-up are
      // column-parallel ([t, h] x [h, n / tp]), attention output and MLP-down row-parallel.
      e.Gemm("aten::mm", t, h, (a + 2 * g) * dh / tp);
      if (t >= 512) e.Attention(t, a / tp, dh);
      e.Gemm("aten::mm", t, a * dh / tp, h);
      if (tp > 1) e.AllReduce(t, h);
      e.Add(t, h);
      e.Gemm("aten::addmm", t, h, f / tp);
      e.Gemm("aten::mm", t, m.ffn_hidden / tp, h);
      if (tp > 1) e.AllReduce(t, h);
      e.Add(t, h);
    }
    if (o.dp > 1) {
      for (int64_t mib : {16, 64, 128, 256}) e.DataParallel(mib * 1024 * 1024 / 2);
    }
  }
  return e.Finish();
}

}  // namespace infralens::trace
