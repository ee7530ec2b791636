#include "io/model_source.h"

#include <filesystem>
#include <system_error>

#include "base/read_file.h"
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
  // A file named that cannot be used, whatever the reason (missing, not a regular file, too
  // large, malformed), is a failure of that file (exit 1), not a usage error (base/read_file.h).
  auto file = [&](const std::string& path) -> StatusOr<model::Model> {
    auto m = ReadHfConfigFile(path, unused);
    if (!m.ok()) return AsFileFailure(m.status());
    return m;
  };
  // "-": a config.json on standard input (no preset is named "-").
  if (name_or_path == "-") return file("-");
  auto preset = model::FindPreset(name_or_path);
  if (preset.ok()) return preset;
  std::error_code ec;
  const std::filesystem::path path{std::string(name_or_path)};
  const bool exists = !name_or_path.empty() && std::filesystem::exists(path, ec);
  if (exists || LooksLikePath(name_or_path)) {
    if (exists && std::filesystem::is_directory(path, ec))
      return file((path / "config.json").string());
    return file(std::string(name_or_path));
  }
  return preset.status();
}

}  // namespace infralens::io
