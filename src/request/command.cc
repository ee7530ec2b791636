#include "request/command.h"

#include "request/engine_requests.h"

namespace infralens::request {

const std::vector<const Command*>& DeclaredCommands() {
  static const std::vector<const Command*> kCommands = {
      &MemoryCommand(),
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
