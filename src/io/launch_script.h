// Expands the part of a bash launch script that decides a training command, without running
// anything: what `plan --from-megatron run.sh` needs to read a user's Megatron-LM script as
// upstream's examples write them (examples/llama/train_llama3_8b_h100_fp8.sh and
// examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh, NVIDIA/Megatron-LM commit d98e8a6):
//
//   X=1, export X=1, X=${X:-default}       scalar assignments ($X, ${X}, ${X:-d}, ${X-d}, ${X:=d})
//   ARGS=( --a 1 --b ), ARGS+=( ... )      arrays, expanded by "${ARGS[@]}" and ${ARGS[@]}
//   if [ "$X" = 1 ]; then ... elif/else/fi  conditions of [ ] / [[ ]] with = == != -z -n,
//                                           -eq -ne -lt -le -gt -ge, !, || and &&
//   \ line continuations, '...' "..." quoting, # comments, <<EOF here-documents (skipped)
//
// Positional parameters ($1, ${3:-MOCK}) and variables the script does not set are empty (their
// defaults apply). Command substitutions $(...) and arithmetic $((...)) are kept as written,
// not run. File tests (-f, -d, -e) are taken as true: the script runs where its files are.
// Every such assumption is listed in the notes.
#ifndef INFRALENS_IO_LAUNCH_SCRIPT_H_
#define INFRALENS_IO_LAUNCH_SCRIPT_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace infralens::io {

// Inputs larger than this are refused (launch scripts are a few kilobytes).
inline constexpr size_t kMaxLaunchScriptBytes = size_t{1} << 20;

struct ExpandedLaunch {
  // The training command (the first command, or else the last variable's value, with a word
  // ending in .py followed by -- flags), as shell text whose words are the expanded words.
  std::string command;
  std::vector<std::string> notes;  // what was assumed (see above), one line each
};

// `origin` names the input in messages. InvalidArgument for an unterminated quote, parenthesis
// or if, a script over the size limit, expansions past a bounded size, or no training command.
StatusOr<ExpandedLaunch> ExpandLaunchScript(std::string_view text, std::string_view origin);

}  // namespace infralens::io

#endif  // INFRALENS_IO_LAUNCH_SCRIPT_H_
