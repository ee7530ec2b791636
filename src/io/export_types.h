// The types every exporter shares (io/export_megatron.h, export_deepspeed.h, export_torchtitan.h)
// and the dispatcher (io/export.h) uses: the formats, one exported file with its notes, and the
// job (degrees, batch, stage split) derived once from a plan's request and layout.
#ifndef INFRALENS_IO_EXPORT_TYPES_H_
#define INFRALENS_IO_EXPORT_TYPES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "plan/planner.h"

namespace infralens::io {

enum class ExportFormat { kMegatron, kDeepSpeed, kTorchtitan, kPytorchCsv };

const char* ExportFormatName(
    ExportFormat f);  // "megatron", "deepspeed", "torchtitan", "pytorch-csv"
// Case-insensitive; InvalidArgument listing the names otherwise.
StatusOr<ExportFormat> ParseExportFormat(std::string_view name);
std::string ExportFormatNames();  // "megatron, deepspeed, torchtitan, pytorch-csv"

struct ExportedConfig {
  std::string text;  // the file's contents
  // What the target cannot express or what the user must still add (Megatron and torchtitan carry
  // these as comments in `text` too; JSON has no comments, so DeepSpeed's live only here).
  std::vector<std::string> notes;
};

// What every exporter derives from the request and layout once.
struct ExportJob {
  int tp = 1, pp = 1, vpp = 1, dp = 1, cp = 1, ep = 1, zero = 0;
  bool sp = false;
  int64_t micro_batch = 1;
  int64_t microbatches = 1;  // per data-parallel rank per step (gradient accumulation steps)
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  int64_t layers_per_chunk = 0;  // transformer layers per (virtual) pipeline stage; 0 if uneven
  std::vector<int64_t> stage_layers;  // per stage in model order (plan::StageLayerCounts)
  int first_stage_layers = 0, last_stage_layers = 0;  // Megatron's uneven forms (0: not set)
  bool embedding_in_split = false, loss_in_split = false;
  std::string layout;  // Megatron-Core's general layout string ("" = not used)
};
// InvalidArgument naming the value and the rule for layouts that do not describe a job.
StatusOr<ExportJob> ResolveExportJob(const plan::PlanRequest& req, const plan::Layout& lay);

// Whether the plan keeps the optimizer's master weights as BF16 remainders
// (PlanRequest::master_weight_remainders; not with Transformer Engine's FP8 parameters, which keep
// FP32 ones), and the note an export that cannot say so carries: `framework` keeps FP32 master
// weights.
bool MasterWeightRemainders(const plan::PlanRequest& req);
std::string MasterWeightsNote(std::string_view framework);

// The comment lines a script or config export starts with: "# WHAT for MODEL on N x GPU (CLUSTER:
// n nodes x g GPUs)", the plan with its microbatches, `targets` (comment lines naming the upstream
// version the export follows, each ending in a newline) and a "# note: " line per note.
std::string ExportHeaderComment(std::string_view what, const plan::PlanRequest& req,
                                const plan::Layout& lay, const ExportJob& j,
                                std::string_view targets, const std::vector<std::string>& notes);

}  // namespace infralens::io

#endif  // INFRALENS_IO_EXPORT_TYPES_H_
