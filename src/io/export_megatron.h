// Megatron-LM's pretrain_gpt.py command line for a plan: parallel degrees, batch, model shape,
// recomputation, precision and communication overlap, spelled as megatron/training/arguments.py
// (NVIDIA/Megatron-LM, 2025) spells them.
#ifndef INFRALENS_IO_EXPORT_MEGATRON_H_
#define INFRALENS_IO_EXPORT_MEGATRON_H_

#include "io/export.h"

namespace infralens::io {

// A shell snippet: comments (the plan, what to add, what Megatron cannot express), the environment
// Megatron requires, and `torchrun ... pretrain_gpt.py` with one argument per line.
StatusOr<ExportedConfig> ExportMegatron(const plan::PlanRequest& req, const plan::Layout& lay);

}  // namespace infralens::io

#endif  // INFRALENS_IO_EXPORT_MEGATRON_H_
