#include "server/assets.h"

#include <algorithm>

namespace infralens::server {

const EmbeddedFile* FindAsset(std::string_view path) {
  const auto& files = EmbeddedFiles();
  auto it = std::lower_bound(files.begin(), files.end(), path,
                             [](const EmbeddedFile& f, std::string_view p) { return f.path < p; });
  return it != files.end() && it->path == path ? &*it : nullptr;
}

std::string_view ContentTypeFor(std::string_view path) {
  auto ends = [&](std::string_view ext) {
    return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".ico")) return "image/x-icon";
  if (ends(".json")) return "application/json";
  if (ends(".csv")) return "text/csv; charset=utf-8";
  if (ends(".txt") || ends(".md")) return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace infralens::server
