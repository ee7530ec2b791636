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

bool OptionFilter::Kept(const std::string& names) const {
  for (const std::string& d : dropped_) {
    if (names == d || names.ends_with("," + d) || names.starts_with(d + ",")) return false;
  }
  return true;
}

void OptionFilter::Int(const std::string& names, int* out, const std::string& help) {
  if (Kept(names)) inner_.Int(names, out, help);
}
void OptionFilter::OptionalInt(const std::string& names, int* out, const std::string& help) {
  if (Kept(names)) inner_.OptionalInt(names, out, help);
}
void OptionFilter::Double(const std::string& names, double* out, const std::string& help) {
  if (Kept(names)) inner_.Double(names, out, help);
}
void OptionFilter::String(const std::string& names, std::string* out, const std::string& help) {
  if (Kept(names)) inner_.String(names, out, help);
}
void OptionFilter::Bool(const std::string& names, bool* out, const std::string& help) {
  if (Kept(names)) inner_.Bool(names, out, help);
}
void OptionFilter::Positionals(const std::string& name, std::vector<std::string>* out,
                               const std::string& help) {
  inner_.Positionals(name, out, help);
}

std::string FormatHelp(const CommandInfo& info) {
  if (!info.format_help.empty() || info.formats.empty()) return info.format_help;
  std::string out = info.formats[0];
  for (size_t i = 1; i < info.formats.size(); ++i)
    out += (i + 1 == info.formats.size() ? " or " : ", ") + info.formats[i];
  return out;
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
