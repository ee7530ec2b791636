#include "request/command.h"

#include <fmt/format.h>

#include "base/read_file.h"
#include "request/engine_requests.h"

namespace infralens::request {

StatusOr<std::string> RunContext::ReadInput(const std::string& value, std::string_view field,
                                            size_t max_bytes) const {
  if (files_allowed) {
    auto text = ReadFileLimited(value, max_bytes);
    if (!text.ok()) return AsFileFailure(text.status());
    return text;
  }
  if (value.size() > max_bytes) {
    return InvalidArgument(
        fmt::format("‹{}›: {} bytes; at most {} are read", field, value.size(), max_bytes));
  }
  return value;
}

const std::vector<const Command*>& DeclaredCommands() {
  static const std::vector<const Command*> kCommands = {
      &MemoryCommand(),
      &PlanCommand(),
      &WorksheetCommand(),
      &WorksheetCheckCommand(),
      &WorksheetTemplateCommand(),
      &ValidateCommand(),
      &TraceAnalyzeCommand(),
      &TraceSummarizeCommand(),
      &TraceCompareCommand(),
      &TraceCalibrateCommand(),
      &TraceMergeCommand(),
      &TraceSynthCommand(),
      &TopologyCommand(),
      &CommCommand(),
      &CommPlanCommand(),
      &PresetsCommand(),
      &ModelCommand(),
      &CompareCommand(),
      &ScenariosCommand(),
      &ScheduleCommand(),
      &ExplainCommand(),
  };
  return kCommands;
}

const Command* FindCommand(std::string_view name) {
  for (const Command* c : DeclaredCommands()) {
    if (c->info().name == name) return c;
  }
  return nullptr;
}

}  // namespace infralens::request
