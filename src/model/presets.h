// Model presets compiled into the binary, and the one resolver every command uses for a model
// argument: a preset name or a path to a Hugging Face config.json.
#ifndef INFRALENS_MODEL_PRESETS_H_
#define INFRALENS_MODEL_PRESETS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"

namespace infralens::model {

struct ModelPreset {
  Model model;                       // model.name is the canonical preset name
  std::vector<std::string> aliases;  // other spellings accepted by FindPreset
};

// Every preset, in the order `infralens presets` lists them.
const std::vector<ModelPreset>& ModelPresets();

// Looks a preset up by name or alias, case-insensitively and ignoring punctuation and spaces
// ("Llama-2-7B", "llama2_7b" and "GPT 18.4B" all work). InvalidArgument with a did-you-mean.
StatusOr<Model> FindPreset(std::string_view name);

}  // namespace infralens::model

#endif  // INFRALENS_MODEL_PRESETS_H_
