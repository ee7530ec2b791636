#include "trace/synth.h"

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "base/atomic_file.h"

namespace infralens::trace {

namespace {

using schedule::Action;
using schedule::ActionType;

// Buffered output to a plain or gzip file, or to a string. A file is written to a temporary
// beside it (base/atomic_file.h); Close() completes it and TakeFile() hands it over, so that every
// rank's file is renamed into place only once all of them were written.
class Writer {
 public:
  ~Writer() {
    if (gz_ != nullptr) gzclose(gz_);  // an error path: the temporary goes with file_
  }
  void OpenMemory(const std::string& name, std::string* out) {
    path_ = name;
    mem_ = out;
  }
  Status Open(const std::string& path, bool gzip) {
    path_ = path;
    RETURN_IF_ERROR(file_.Open(path));
    if (gzip) {
      // zlib closes the descriptor it is given; it gets its own, and file_ checks the final close.
      const int fd = ::dup(file_.fd());
      gz_ = fd < 0 ? nullptr : gzdopen(fd, "wb1");
      if (gz_ == nullptr) {
        if (fd >= 0) ::close(fd);
        return IoError(fmt::format("{}: cannot open for gzip writing", path));
      }
    }
    return Status::Ok();
  }
  fmt::memory_buffer& buf() { return buf_; }
  Status MaybeFlush() { return buf_.size() >= (1u << 20) ? Flush() : Status::Ok(); }
  Status Flush() {
    if (buf_.size() == 0) return Status::Ok();
    Status st;
    if (mem_ != nullptr) {
      mem_->append(buf_.data(), buf_.size());
    } else if (gz_ != nullptr) {
      if (gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) !=
          static_cast<int>(buf_.size())) {
        st = IoError(fmt::format("{}: write failed ({})", path_, std::strerror(errno)));
      }
    } else {
      st = file_.Write(std::string_view(buf_.data(), buf_.size()));
    }
    written_ += buf_.size();
    buf_.clear();
    return st;
  }
  Status Close() {
    Status st = Flush();
    if (gz_ != nullptr) {
      const int rc = gzclose(gz_);
      gz_ = nullptr;
      if (st.ok() && rc != Z_OK) st = IoError(fmt::format("{}: write failed", path_));
    }
    if (mem_ != nullptr) return st;
    if (!st.ok()) {
      file_.Abort();
      return st;
    }
    return file_.Finish();
  }
  AtomicFile TakeFile() { return std::move(file_); }
  uint64_t written() const { return written_; }

 private:
  std::string path_;
  AtomicFile file_;
  gzFile gz_ = nullptr;
  std::string* mem_ = nullptr;
  fmt::memory_buffer buf_;
  uint64_t written_ = 0;
};

// Synth's own file names: rank<N>.json or rank<N>.json.gz. --force removes only these.
bool IsRankFileName(const std::string& name) {
  if (name.rfind("rank", 0) != 0) return false;
  size_t i = 4;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  if (i == 4) return false;
  const std::string rest = name.substr(i);
  return rest == ".json" || rest == ".json.gz";
}

// The output folder: created when missing; an existing one must be empty unless `force`.
Status PrepareFolder(const std::string& dir, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st)) {
    return FailedPrecondition(fmt::format("-o {}: exists and is not a folder", dir));
  }
  if (!fs::exists(st)) {
    fs::create_directories(dir, ec);
    if (ec) return IoError(fmt::format("-o {}: cannot create the folder ({})", dir, ec.message()));
    return Status::Ok();
  }
  // The temporaries of a synth killed mid-write (SIGKILL, a crash) are ours to remove: they do
  // not make the folder "not empty".
  bool empty = true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (IsAbandonedTemporary(name) && name.rfind(".rank", 0) == 0) {
      std::error_code rm;
      fs::remove(it->path(), rm);
      if (!rm) continue;
    }
    empty = false;
  }
  if (ec) return IoError(fmt::format("-o {}: cannot list the folder ({})", dir, ec.message()));
  if (force) return Status::Ok();
  if (!empty) {
    return FailedPrecondition(fmt::format(
        "-o {}: the folder is not empty; use an empty or new folder, or ‹force› to replace the "
        "rank<N>.json[.gz] files an earlier synth wrote there (other files are kept)",
        dir));
  }
  return Status::Ok();
}

// With every new file complete: remove earlier rank files that the new run does not replace
// (a run with more ranks, or the other compression), then rename the new files into place.
Status CommitFolder(const std::string& dir, std::vector<AtomicFile>& files) {
  namespace fs = std::filesystem;
  std::set<std::string> fresh;
  for (const AtomicFile& f : files) fresh.insert(fs::path(f.path()).filename().string());
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (IsRankFileName(name) && fresh.count(name) == 0 && it->is_regular_file()) {
      std::error_code rm;
      fs::remove(it->path(), rm);
      if (rm)
        return IoError(fmt::format("{}: cannot remove ({})", it->path().string(), rm.message()));
    }
  }
  if (ec) return IoError(fmt::format("-o {}: cannot list the folder ({})", dir, ec.message()));
  for (AtomicFile& f : files) RETURN_IF_ERROR(f.Commit());
  return Status::Ok();
}

std::string_view KernelName(ActionType t) {
  switch (t) {
    case ActionType::kForward:
      return "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn";
    case ActionType::kBackward:
      return "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nt";
    case ActionType::kBackwardInput:
      return "sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
             "tensor16x8x16_kernel";
    case ActionType::kBackwardWeight:
      return "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
             "tensor16x8x16_kernel";
    case ActionType::kOverlapFB:
      return "void at::native::vectorized_elementwise_kernel<4, "
             "at::native::BinaryFunctor<c10::BFloat16>>(int)";
  }
  return "kernel";
}

// Where an action's result lives: (rank, index in the rank's list).
struct Loc {
  int32_t rank = -1;
  int32_t index = -1;
};

// Times are whole nanoseconds, written as exact microsecond decimals ("1000333.333"), so kernels
// that split an action meet exactly.
int64_t MsToNs(double ms) { return static_cast<int64_t>(std::llround(ms * 1e6)); }
std::string T(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

struct Transfer {
  int32_t from_rank, to_rank;
  double send_start_ms, arrival_ms;                  // relative to the step start
  double post_ms;                                    // when the consumer posted its receive
  int32_t consumer_index = -1, producer_index = -1;  // the actions, on their ranks
};

// Writes into `dir`, or into `mem` when it is not null.
StatusOr<SynthSummary> Synthesize(const schedule::Schedule& s, const sim::Costs& costs,
                                  const SynthOptions& o, const std::string& dir,
                                  std::vector<SynthFile>* mem) {
  if (o.steps < 1 || o.steps > 1'000'000)
    return InvalidArgument(fmt::format("‹steps› {}: must be 1..1000000", o.steps));
  if (o.kernels_per_action < 1 || o.kernels_per_action > 10'000) {
    return InvalidArgument(
        fmt::format("‹kernels_per_action› {}: must be 1..10000", o.kernels_per_action));
  }
  if (o.cpu_ops_per_kernel < 0 || o.cpu_ops_per_kernel > 1000) {
    return InvalidArgument(
        fmt::format("‹cpu_ops_per_kernel› {}: must be 0..1000", o.cpu_ops_per_kernel));
  }
  if (!(o.step_gap_ms >= 0 && o.step_gap_ms <= 1e6)) {
    return InvalidArgument(fmt::format("‹step_gap› {}: must be 0..1e6 ms", o.step_gap_ms));
  }
  ASSIGN_OR_RETURN(sim::SimResult sim, sim::Simulate(s, costs));
  SynthSummary summary;
  summary.makespan_ms = sim.makespan_ms;
  summary.bubble_fraction = sim.bubble_fraction;

  // Producers of every F and of every B / I (the backward an upstream stage waits for).
  const int S = s.num_stages(), m = s.microbatches;
  std::vector<Loc> fwd(static_cast<size_t>(S) * m), bwd(static_cast<size_t>(S) * m);
  auto at = [&](std::vector<Loc>& v, int stage, int mb) -> Loc& {
    return v[static_cast<size_t>(stage) * m + mb];
  };
  for (int r = 0; r < s.pp; ++r) {
    for (size_t k = 0; k < s.ranks[r].size(); ++k) {
      const Action& a = s.ranks[r][k];
      const Loc loc{r, static_cast<int32_t>(k)};
      if (a.type == ActionType::kForward || a.type == ActionType::kOverlapFB)
        at(fwd, a.stage, a.microbatch) = loc;
      if (a.type == ActionType::kBackward || a.type == ActionType::kBackwardInput)
        at(bwd, a.stage, a.microbatch) = loc;
      if (a.type == ActionType::kOverlapFB) at(bwd, a.b_stage, a.b_microbatch) = loc;
    }
  }
  // Transfers between ranks, per consumer rank (sends are written on the producer's rank).
  std::vector<std::vector<Transfer>> transfers(s.pp);
  for (int r = 0; r < s.pp; ++r) {
    for (size_t k = 0; k < s.ranks[r].size(); ++k) {
      const Action& a = s.ranks[r][k];
      std::vector<Loc> deps;
      auto fwd_dep = [&](int stage, int mb) {
        if (stage > 0) deps.push_back(at(fwd, stage - 1, mb));
      };
      auto bwd_dep = [&](int stage, int mb) {
        deps.push_back(stage < S - 1 ? at(bwd, stage + 1, mb) : at(fwd, S - 1, mb));
      };
      switch (a.type) {
        case ActionType::kForward:
          fwd_dep(a.stage, a.microbatch);
          break;
        case ActionType::kBackward:
        case ActionType::kBackwardInput:
          bwd_dep(a.stage, a.microbatch);
          break;
        case ActionType::kBackwardWeight:
          break;
        case ActionType::kOverlapFB:
          fwd_dep(a.stage, a.microbatch);
          bwd_dep(a.b_stage, a.b_microbatch);
          break;
      }
      const double post = k == 0 ? 0.0 : sim.end_ms[r][k - 1];
      for (const Loc& d : deps) {
        if (d.rank < 0 || d.rank == r) continue;
        const double end = sim.end_ms[d.rank][d.index];
        transfers[r].push_back(
            {d.rank, r, end, end + costs.p2p_ms, post, static_cast<int32_t>(k), d.index});
      }
    }
  }

  // The size, before a byte is written: events the files will hold (per action one annotation,
  // per kernel the kernel, its launch and the CPU operators; per transfer a kernel and its launch
  // on each side) at the fewest bytes one event takes, so that only what surely goes past the
  // bound is refused.
  double events = 0;
  for (int r = 0; r < s.pp; ++r) {
    events += static_cast<double>(s.ranks[r].size()) *
                  (1.0 + o.kernels_per_action * (2.0 + o.cpu_ops_per_kernel)) +
              4.0 * static_cast<double>(transfers[r].size());
  }
  const double estimate = events * o.steps * kMinSynthEventBytes;
  if (estimate > static_cast<double>(kMaxSynthJsonBytes)) {
    return InvalidArgument(fmt::format(
        "‹steps› {} x ‹kernels_per_action› {} x ‹cpu_ops_per_kernel› {}: the traces would hold "
        "at least {:.1f} GB of JSON, past the bound of {} GB; ask for fewer steps, kernels or "
        "CPU operators",
        o.steps, o.kernels_per_action, o.cpu_ops_per_kernel, estimate / 1e9,
        kMaxSynthJsonBytes / 1'000'000'000));
  }

  std::vector<AtomicFile> pending;  // complete rank files, renamed into place together
  if (mem == nullptr) {
    RETURN_IF_ERROR(PrepareFolder(dir, o.force));
    pending.reserve(s.pp);
  } else {
    mem->clear();
    mem->reserve(s.pp);
  }

  const int64_t step_ns = MsToNs(sim.makespan_ms) + MsToNs(o.step_gap_ms);
  const int64_t base_ns = 1'000'000'000;
  const std::string ranks_list = [&] {
    std::string l = "[";
    for (int r = 0; r < s.pp; ++r) l += (r ? ", " : "") + std::to_string(r);
    return l + "]";
  }();
  const int64_t activation_nelems = 4 * 1024 * 1024;  // 8 MiB of bf16 per microbatch activation
  for (int r = 0; r < s.pp; ++r) {
    const std::string name = fmt::format("rank{}.json{}", r, o.gzip ? ".gz" : "");
    Writer w;
    std::string path = name;
    if (mem != nullptr) {
      mem->push_back({name, std::string()});
      w.OpenMemory(name, &mem->back().content);
    } else {
      path = (std::filesystem::path(dir) / name).string();
      RETURN_IF_ERROR(w.Open(path, o.gzip));
    }
    auto& b = w.buf();
    const int cpu_pid = 4200 + r, cpu_tid = 4200 + r;
    fmt::format_to(
        std::back_inserter(b),
        "{{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": "
        "{}, "
        "\"world_size\": {}, \"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": "
        "\"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": {}, \"ranks\": {}}}], "
        "\"nccl_version\": \"2.21.5\"}},\n  \"traceEvents\": [\n",
        r, s.pp, s.pp, ranks_list);
    bool first = true;
    int64_t ext = 1, corr = 1, ev_idx = 0;
    auto sep = [&] {
      if (!first) b.append(std::string_view(",\n"));
      first = false;
    };
    auto cpu_event = [&](std::string_view cat, std::string_view name, int64_t ts, int64_t dur) {
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": "
                     "{}, \"ts\": {}, "
                     "\"dur\": {}, \"args\": {{\"External id\": {}, \"Ev Idx\": {}}}}}",
                     cat, name, cpu_pid, cpu_tid, T(ts), T(dur), ext++, ev_idx++);
    };
    // One kernel and its launch; `meta` is extra args text (collective metadata) or empty.
    auto kernel = [&](std::string_view name, int stream, int64_t ts, int64_t dur,
                      const std::string& meta) {
      const int64_t c = corr++;
      const int64_t launch = ts - 5000;
      for (int k = 0; k < o.cpu_ops_per_kernel; ++k)
        cpu_event("cpu_op", "aten::mm", launch - 2000, 1500);
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                     "\"cudaLaunchKernel\", \"pid\": {}, "
                     "\"tid\": {}, \"ts\": {}, \"dur\": 3.000, \"args\": {{\"External id\": "
                     "{}, \"cbid\": 211, "
                     "\"correlation\": {}}}}}",
                     cpu_pid, cpu_tid, T(launch), ext, c);
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, "
                     "\"cat\": \"ac2g\", "
                     "\"name\": \"ac2g\"}}",
                     c, cpu_pid, cpu_tid, T(launch));
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, "
                     "\"tid\": {}, \"ts\": "
                     "{}, \"dur\": {}, \"args\": {{\"External id\": {}, \"queued\": 0, "
                     "\"device\": {}, "
                     "\"context\": 1, \"stream\": {}, \"correlation\": {}, \"registers per "
                     "thread\": 168, \"shared "
                     "memory\": 0, \"blocks per SM\": 1.21, \"warps per SM\": 9.7, \"grid\": [132, "
                     "1, 1], \"block\": "
                     "[256, 1, 1], \"est. achieved occupancy %\": 12{}}}}}",
                     name, r, stream, T(ts), T(dur), ext++, r, stream, c, meta);
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, "
                     "\"cat\": \"ac2g\", "
                     "\"name\": \"ac2g\", \"bp\": \"e\"}}",
                     c, r, stream, T(ts));
      ++summary.kernels;
    };
    // The NCCL metadata of one send / recv to or from global rank `peer` in process group
    // `pg_name` / `pg_desc` (torch/csrc/profiler/util.cpp saveNcclMeta); `group_rank`, when not
    // empty, is written before the peer's global rank.
    auto nccl_p2p_meta = [&](bool send, int peer, std::string_view pg_name,
                             std::string_view pg_desc, std::string_view group_rank) {
      if (o.no_metadata) return std::string();
      return fmt::format(
          ", \"Collective name\": \"{}\", \"In msg nelems\": {}, \"Out msg nelems\": {}, "
          "\"Group size\": {}, \"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split "
          "size\": \"[]\", \"Process Group Name\": \"{}\", \"Process Group Description\": "
          "\"{}\", \"Process Group Ranks\": \"{}\", {}\"{}\": {}",
          send ? "send" : "recv", activation_nelems, activation_nelems, s.pp, pg_name, pg_desc,
          ranks_list, group_rank, send ? "Dst Rank" : "Src Rank", peer);
    };
    // The kernel's: the default process group.
    auto p2p_meta = [&](bool send, int peer) {
      return nccl_p2p_meta(send, peer, "0", "default_pg", "");
    };
    const std::string_view p2p_kernel =
        o.no_metadata ? "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"
                      : "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
    // --style megatron (SynthOptions::megatron): one step of rank r.
    const int autograd_tid = cpu_tid + 1;
    auto mcpu = [&](int tid, std::string_view name, int64_t ts, int64_t dur,
                    const std::string& args) {
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}\", \"pid\": {}, "
                     "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                     "\"Ev Idx\": {}{}}}}}",
                     name, cpu_pid, tid, T(ts), T(dur), ext++, ev_idx++, args);
    };
    auto mkernel = [&](int tid, std::string_view name, int stream, int64_t launch, int64_t ts,
                       int64_t dur) {
      const int64_t c = corr++;
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                     "\"cudaLaunchKernel\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": 3.000, "
                     "\"args\": {{\"External id\": {}, \"cbid\": 211, \"correlation\": {}}}}}",
                     cpu_pid, tid, T(launch), ext, c);
      sep();
      fmt::format_to(std::back_inserter(b),
                     "  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, "
                     "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                     "\"queued\": 0, \"device\": {}, \"context\": 1, \"stream\": {}, "
                     "\"correlation\": {}, \"grid\": [132, 1, 1], \"block\": [256, 1, 1]}}}}",
                     name, r, stream, T(ts), T(dur), ext++, r, stream, c);
      ++summary.kernels;
    };
    // What PyTorch records on the CPU for one send / recv: the pipeline's process group, and
    // "Rank", the peer's rank in the group, before "Dst Rank" / "Src Rank", its global rank.
    auto p2p_call_args = [&](bool send, int peer) {
      return nccl_p2p_meta(send, peer, "1", "PIPELINE_MODEL_PARALLEL_GROUP",
                           fmt::format("\"Rank\": {}, ", peer));
    };
    // Per action of this rank: the transfers it receives before it runs and sends after it.
    std::vector<std::vector<const Transfer*>> recv_before(s.ranks[r].size()),
        send_after(s.ranks[r].size());
    for (const Transfer& t : transfers[r]) recv_before[t.consumer_index].push_back(&t);
    for (int q = 0; q < s.pp; ++q) {
      for (const Transfer& t : transfers[q]) {
        if (t.from_rank == r) send_after[t.producer_index].push_back(&t);
      }
    }
    auto megatron_step = [&](int64_t t0) -> Status {
      const size_t n_actions = s.ranks[r].size();
      int64_t last_launch = t0 - 20000;
      // The batch_isend_irecv between action k-1 and action k (k = n_actions: after the last).
      auto batch = [&](size_t k) {
        std::vector<std::pair<bool, int>> ops;
        double start_ms = k == 0 ? 0.0 : sim.end_ms[r][k - 1], end_ms = start_ms;
        if (k > 0) {
          for (const Transfer* t : send_after[k - 1]) {
            ops.push_back({true, t->to_rank});
            end_ms = std::max(end_ms, start_ms + costs.p2p_ms);
          }
        }
        if (k < n_actions) {
          for (const Transfer* t : recv_before[k]) {
            ops.push_back({false, t->from_rank});
            end_ms = std::max(end_ms, t->arrival_ms);
          }
        }
        if (ops.empty()) return;
        const int64_t start = t0 + MsToNs(start_ms), end = t0 + MsToNs(end_ms);
        const int64_t launch = std::max(start - 6000, last_launch + 1);
        const int64_t calls = static_cast<int64_t>(ops.size());
        for (int64_t i = 0; i < calls; ++i) {
          mcpu(cpu_tid, "record_param_comms", launch - 1000 * (calls - i) - 500, 400,
               p2p_call_args(ops[i].first, ops[i].second));
        }
        mcpu(cpu_tid, "nccl:coalesced", launch - 200, 3400, "");
        mkernel(cpu_tid, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 20, launch,
                start, end - start);
        last_launch = launch;
      };
      for (size_t k = 0; k < n_actions; ++k) {
        batch(k);
        const Action& a = s.ranks[r][k];
        const int64_t start = t0 + MsToNs(sim.start_ms[r][k]), end = t0 + MsToNs(sim.end_ms[r][k]);
        const int64_t n = o.kernels_per_action;
        auto split = [&](int64_t j) { return start + (end - start) * j / n; };
        const bool backward = a.type != ActionType::kForward;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t launch = std::max(split(j) - 5000, last_launch + 1);
          if (backward) {
            mcpu(autograd_tid, "autograd::engine::evaluate_function: AddmmBackward0", launch - 1000,
                 5000, "");
            mcpu(autograd_tid, "AddmmBackward0", launch - 800, 4600, "");
            mkernel(autograd_tid, KernelName(a.type), 7, launch, split(j), split(j + 1) - split(j));
          } else {
            mcpu(cpu_tid, "aten::linear", launch - 1000, 5000, "");
            mkernel(cpu_tid, KernelName(a.type), 7, launch, split(j), split(j + 1) - split(j));
          }
          last_launch = launch;
        }
        RETURN_IF_ERROR(w.MaybeFlush());
      }
      batch(n_actions);
      return w.MaybeFlush();
    };
    for (int step = 0; step < o.steps; ++step) {
      const int64_t t0 = base_ns + step * step_ns;
      cpu_event("user_annotation", fmt::format("ProfilerStep#{}", step), t0 - 20000,
                MsToNs(sim.makespan_ms) + 20000);
      if (o.megatron) {
        RETURN_IF_ERROR(megatron_step(t0));
        continue;
      }
      // Receives this rank posts, then sends it makes to later consumers.
      for (const Transfer& t : transfers[r]) {
        const int64_t post = t0 + MsToNs(t.post_ms);
        const int64_t end = t0 + MsToNs(std::max(t.post_ms, t.arrival_ms));
        kernel(p2p_kernel, 200 + t.from_rank, post, end - post, p2p_meta(false, t.from_rank));
      }
      for (int q = 0; q < s.pp; ++q) {
        for (const Transfer& t : transfers[q]) {
          if (t.from_rank != r) continue;
          kernel(p2p_kernel, 100 + t.to_rank, t0 + MsToNs(t.send_start_ms), MsToNs(costs.p2p_ms),
                 p2p_meta(true, t.to_rank));
        }
      }
      for (size_t k = 0; k < s.ranks[r].size(); ++k) {
        const Action& a = s.ranks[r][k];
        const int64_t start = t0 + MsToNs(sim.start_ms[r][k]), end = t0 + MsToNs(sim.end_ms[r][k]);
        const int64_t n = o.kernels_per_action;
        auto split = [&](int64_t j) { return start + (end - start) * j / n; };
        // PP annotation around the launches of the action's kernels.
        const int64_t first_launch = start - 5000, last_launch = split(n - 1) - 5000;
        cpu_event("user_annotation", "PP:" + schedule::ToString(a), first_launch - 1000,
                  last_launch + 4000 - (first_launch - 1000));
        for (int64_t j = 0; j < n; ++j)
          kernel(KernelName(a.type), 7, split(j), split(j + 1) - split(j), "");
        RETURN_IF_ERROR(w.MaybeFlush());
      }
      RETURN_IF_ERROR(w.MaybeFlush());
    }
    sep();
    fmt::format_to(std::back_inserter(b),
                   "  {{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": {}, \"pid\": {}, "
                   "\"tid\": 0, \"args\": "
                   "{{\"name\": \"python3\"}}}},\n  {{\"name\": \"process_name\", \"ph\": \"M\", "
                   "\"ts\": {}, "
                   "\"pid\": {}, \"tid\": 0, \"args\": {{\"name\": \"GPU {}\"}}}}\n",
                   T(base_ns), cpu_pid, T(base_ns), r, r);
    fmt::format_to(std::back_inserter(b),
                   "  ],\n  \"traceName\": \"{}\",\n  \"displayTimeUnit\": \"ms\"\n}}\n",
                   fmt::format("rank{}", r));
    RETURN_IF_ERROR(w.Close());
    if (mem == nullptr) pending.push_back(w.TakeFile());
    summary.bytes += w.written();
    summary.files.push_back(path);
  }
  if (mem == nullptr) RETURN_IF_ERROR(CommitFolder(dir, pending));
  return summary;
}

}  // namespace

StatusOr<SynthSummary> WriteSynthTrace(const schedule::Schedule& s, const sim::Costs& costs,
                                       const SynthOptions& options, const std::string& dir) {
  return Synthesize(s, costs, options, dir, nullptr);
}

StatusOr<SynthSummary> SynthTraceFiles(const schedule::Schedule& s, const sim::Costs& costs,
                                       const SynthOptions& options, std::vector<SynthFile>* files) {
  if (options.gzip) return InvalidArgument("gzip: generated traces in memory are plain JSON");
  return Synthesize(s, costs, options, "", files);
}

}  // namespace infralens::trace
