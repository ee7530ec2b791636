// infralens presets: the models and GPUs compiled into the binary, one section per kind.
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "request/engine_requests.h"

namespace infralens::cli {

using request::PresetKindNames;
using request::PresetsJson;
using request::PresetsText;
using request::RegisterPresetKind;

Status RunPresets(const std::vector<std::string>& args, CliIO& io) {
  std::string kind = "all", format = "table", output;
  bool json = false;
  const std::vector<std::string> kinds = PresetKindNames();
  Flags flags("presets", "list the model and hardware presets built into infralens",
              "infralens presets [--kind " + Join(kinds, "|") + "] [--json]",
              {"infralens presets", "infralens presets --kind models",
               "infralens presets --kind gpus --json"});
  RegisterPresetKind(flags, &kind);
  AddOutputFlags(flags, &format, &json, &output, "table or json (one array per section)");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  RETURN_IF_ERROR(ResolveOutputFormat(&format, json, {"table", "json"}));
  ASSIGN_OR_RETURN(std::string out, format == "json" ? PresetsJson(kind) : PresetsText(kind));
  return WriteOutput(output, out, io);
}

}  // namespace infralens::cli
