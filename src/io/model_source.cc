#include "io/model_source.h"

#include <filesystem>
#include <system_error>

#include "base/strings.h"
#include "io/hf_config.h"
#include "model/presets.h"

namespace infralens::io {

namespace {

bool LooksLikePath(std::string_view s) {
  return s.find('/') != std::string_view::npos || s.find('\\') != std::string_view::npos ||
         (s.size() >= 5 && ToLower(s.substr(s.size() - 5)) == ".json");
}

}  // namespace

StatusOr<model::Model> ResolveModel(std::string_view name_or_path,
                                    std::vector<std::string>* unused) {
  if (unused != nullptr) unused->clear();
  // "-": a config.json on standard input (no preset is named "-").
  if (name_or_path == "-") return ReadHfConfigFile("-", unused);
  auto preset = model::FindPreset(name_or_path);
  if (preset.ok()) return preset;
  std::error_code ec;
  const std::filesystem::path path{std::string(name_or_path)};
  const bool exists = !name_or_path.empty() && std::filesystem::exists(path, ec);
  if (exists || LooksLikePath(name_or_path)) {
    if (exists && std::filesystem::is_directory(path, ec))
      return ReadHfConfigFile((path / "config.json").string(), unused);
    return ReadHfConfigFile(std::string(name_or_path), unused);
  }
  return preset.status();
}

}  // namespace infralens::io
