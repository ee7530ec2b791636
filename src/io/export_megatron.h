// Megatron-LM's pretrain_gpt.py command line for a plan: parallel degrees, batch, model shape,
// recomputation, precision and communication overlap, spelled as megatron/training/arguments.py
// (NVIDIA/Megatron-LM commit 000c4ac) spells them.
#ifndef INFRALENS_IO_EXPORT_MEGATRON_H_
#define INFRALENS_IO_EXPORT_MEGATRON_H_

#include "io/export_types.h"

namespace infralens::io {

// The upstream commit every flag and rule of the export is read from (tests/data/
// megatron_arguments_flags.txt is that commit's flag list).
inline constexpr const char* kMegatronCommit = "000c4ac24f61159c138b0975def722c65245983c";
// arguments.py defaults: --norm-epsilon 1e-5, --make-vocab-size-divisible-by 128.
inline constexpr double kMegatronNormEps = 1e-5;
inline constexpr int64_t kMegatronVocabDivisor = 128;

// The vocabulary Megatron-LM builds: `vocab` rounded up to a multiple of divisible_by x tp
// (_vocab_size_with_padding, megatron/training/tokenizer/tokenizer.py).
int64_t MegatronPaddedVocab(int64_t vocab, int64_t divisible_by, int tp);

// A shell snippet: comments (the plan, what to add, what Megatron cannot express), the environment
// Megatron requires, and `torchrun ... pretrain_gpt.py` with one argument per line.
StatusOr<ExportedConfig> ExportMegatron(const plan::PlanRequest& req, const plan::Layout& lay);

}  // namespace infralens::io

#endif  // INFRALENS_IO_EXPORT_MEGATRON_H_
