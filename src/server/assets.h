// The pages, scripts and styles under web/, compiled into the binary at build time
// (cmake/embed_assets.cmake writes the table). The server serves only these: no request path
// ever reaches the filesystem.
#ifndef INFRALENS_SERVER_ASSETS_H_
#define INFRALENS_SERVER_ASSETS_H_

#include <string_view>
#include <vector>

namespace infralens::server {

struct EmbeddedFile {
  std::string_view path;  // relative to web/, e.g. "js/pipeline.js"
  std::string_view data;
};

// Every file under web/, sorted by path (generated).
const std::vector<EmbeddedFile>& EmbeddedFiles();

// The file at `path` (relative, no leading '/'), or nullptr.
const EmbeddedFile* FindAsset(std::string_view path);

// The Content-Type for a file name, by extension.
std::string_view ContentTypeFor(std::string_view path);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_ASSETS_H_
