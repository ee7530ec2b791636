#include "request/pipeline_flags.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/read_file.h"
#include "base/strings.h"
#include "schedule/schedule.h"
#include "sim/compare.h"

namespace infralens::request {

void RegisterScheduleOption(FlagSink& flags, std::string* name) {
  std::vector<std::string> names;
  for (const auto& info : schedule::AllSchedules()) names.emplace_back(info.name);
  flags.String("-s,--schedule", name,
               "pipeline schedule: " + Join(names, ", ") + " (PyTorch's names work too)");
}

void PipelineFlags::Register(FlagSink& flags, bool stage_costs) {
  // One convention everywhere (schedule, compare, trace synth, the pipeline page): the time of
  // one microbatch through one rank's layers, so schedules with v chunks per rank get the same
  // work per rank and can be compared (a chunk action takes 1/v of it).
  const std::string unit =
      fmt::format("ms per rank per microbatch, 0..{:g}; a chunk action takes 1/v", sim::kMaxCostMs);
  flags.Int("--pp,--stages", &pp, kPipelineDegreeHelp);
  flags.Int("--vpp,--virtual", &vpp, kVirtualStagesHelp);
  flags.Int("-m,--microbatches", &microbatches,
            "microbatches per iteration m; at most 10 million actions (P x v x m x 2, or x 3 with "
            "I and W), about 500 MB; schedule --format csv streams up to 64 million");
  flags.Double("--f", &f, "forward time (" + unit + ")");
  flags.Double("--b", &b, "full backward time (" + unit + "); B = I + W");
  flags.Double("--i", &i, "input-gradient backward time (" + unit + ")");
  flags.Double("--w", &w, "weight-gradient backward time (" + unit + ")");
  flags.Double("--fb", &fb, "overlapped F+B pair time (DualPipeV); negative = f + b");
  flags.Double("--p2p", &p2p,
               fmt::format("point-to-point latency between ranks (ms, 0..{:g})", sim::kMaxCostMs));
  if (stage_costs) {
    flags.String("--stage-costs", &stage_costs_path, "CSV of per-stage costs: stage,f,b,i,w,fb");
  }
}

Status PipelineFlags::CheckShape() const {
  if (pp < 1 || pp > kMaxPipelineRanks) {
    return InvalidArgument(fmt::format("--pp {}: must be 1..{}", pp, kMaxPipelineRanks));
  }
  if (vpp < 0 || vpp > kMaxChunksPerRank) {
    return InvalidArgument(fmt::format("--vpp {}: must be 1..{} (or 0 for the schedule's default)",
                                       vpp, kMaxChunksPerRank));
  }
  if (microbatches < 1)
    return InvalidArgument(fmt::format("-m {}: must be at least 1", microbatches));
  return Status::Ok();
}

StatusOr<sim::Costs> PipelineFlags::Costs(const GivenFn& given, int num_stages, int chunks_per_rank,
                                          const RunContext* ctx) const {
  sim::CostInput in;
  in.f = f;
  in.fb = fb;
  in.p2p = p2p;
  if (given("--b")) in.b = b;
  if (given("--i")) in.i = i;
  if (given("--w")) in.w = w;
  ASSIGN_OR_RETURN(sim::Costs c, sim::ResolveCosts(in));
  RETURN_IF_ERROR(sim::ValidateCosts(c, num_stages));
  // Per rank per microbatch on the command line; one chunk's action takes 1/v of it. The stage
  // costs file names stages (chunks), so its values are taken as they are.
  c = sim::ChunkCosts(c, std::max(1, chunks_per_rank));
  if (!stage_costs_path.empty()) {
    const bool file = ctx == nullptr || ctx->files_allowed;
    auto text = file ? ReadFileLimited(stage_costs_path, kMaxStageCostsBytes)
                     : ctx->ReadInput(stage_costs_path, "stage_costs", kMaxStageCostsBytes);
    if (!text.ok()) return file ? AsFileFailure(text.status()) : text.status();
    Status st = ReadStageCosts(*text, c.uniform, num_stages, c);
    if (!st.ok() && !file) return InvalidArgument("‹stage_costs›: " + st.message());
    if (!st.ok()) {
      return AsFileFailure(
          InvalidArgument(fmt::format("--stage-costs {}: {}", stage_costs_path, st.message())));
    }
    RETURN_IF_ERROR(sim::ValidateCosts(c, num_stages));
  }
  return c;
}

Status ReadStageCosts(const std::string& text, const sim::StageCosts& base, int num_stages,
                      sim::Costs& costs) {
  costs.per_stage.assign(num_stages, base);
  std::vector<std::string> columns;
  int line_no = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    auto cells = Split(line, ',');
    if (columns.empty()) {
      for (auto cell : cells) {
        std::string name = ToLower(Trim(cell));
        if (name != "stage" && name != "f" && name != "b" && name != "i" && name != "w" &&
            name != "fb") {
          return InvalidArgument(fmt::format(
              "line {}: unknown column '{}'; allowed: stage, f, b, i, w, fb", line_no, name));
        }
        columns.push_back(name);
      }
      if (columns[0] != "stage")
        return InvalidArgument(fmt::format("line {}: the first column must be 'stage'", line_no));
      continue;
    }
    if (cells.size() != columns.size()) {
      return InvalidArgument(
          fmt::format("line {}: {} cells, expected {}", line_no, cells.size(), columns.size()));
    }
    auto stage = ParseInt(cells[0]);
    if (!stage || *stage < 0 || *stage >= num_stages) {
      return InvalidArgument(fmt::format("line {}: stage '{}' is not one of 0..{}", line_no,
                                         Trim(cells[0]), num_stages - 1));
    }
    sim::StageCosts& sc = costs.per_stage[*stage];
    bool b_set = false, i_set = false, w_set = false;
    for (size_t k = 1; k < cells.size(); ++k) {
      auto v = ParseDouble(cells[k]);
      if (!v || *v < 0) {
        return InvalidArgument(fmt::format("line {}: {} '{}' must be a number >= 0 (ms)", line_no,
                                           columns[k], Trim(cells[k])));
      }
      const std::string& col = columns[k];
      if (col == "f") sc.f_ms = *v;
      if (col == "b") sc.b_ms = *v, b_set = true;
      if (col == "i") sc.i_ms = *v, i_set = true;
      if (col == "w") sc.w_ms = *v, w_set = true;
      if (col == "fb") sc.fb_ms = *v;
    }
    // Keep B = I + W unless the file says otherwise, as on the command line.
    if (b_set && !i_set && !w_set) sc.i_ms = sc.w_ms = sc.b_ms / 2;
    if (!b_set && (i_set || w_set)) sc.b_ms = sc.i_ms + sc.w_ms;
  }
  if (columns.empty()) return InvalidArgument("empty file; expected a header such as 'stage,f,b'");
  return Status::Ok();
}

}  // namespace infralens::request
