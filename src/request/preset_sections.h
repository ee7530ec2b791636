// `infralens presets` prints one section per kind of preset. A section is a name for --kind, a
// title, a text renderer and a JSON renderer (an array under the section's name); adding a kind
// is one line in PresetSections() (presets_request.cc).
#ifndef INFRALENS_REQUEST_PRESET_SECTIONS_H_
#define INFRALENS_REQUEST_PRESET_SECTIONS_H_

#include <string>
#include <vector>

#include "base/json_writer.h"

namespace infralens::request {

struct PresetSection {
  const char* kind;             // --kind value and JSON key, e.g. "models"
  const char* title;            // heading in the text output
  std::string (*text)();        // a table, ending in a newline
  void (*json)(JsonWriter& w);  // writes one JSON array
};

// Every section, in the order they are printed.
const std::vector<PresetSection>& PresetSections();

// The sections defined in presets_request.cc.
std::string ModelPresetsText();
void ModelPresetsJson(JsonWriter& w);
std::string GpuPresetsText();
void GpuPresetsJson(JsonWriter& w);
std::string ClusterPresetsText();
void ClusterPresetsJson(JsonWriter& w);

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_PRESET_SECTIONS_H_
