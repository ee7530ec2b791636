// Where a model comes from: a preset name or a Hugging Face config.json. In io (it reads files),
// above model, which knows only its presets.
#ifndef INFRALENS_IO_MODEL_SOURCE_H_
#define INFRALENS_IO_MODEL_SOURCE_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"

namespace infralens::io {

// A preset name, or a path to a config.json (or a directory holding one), or "-" for a
// config.json on standard input. A string that names
// no preset and no existing file is an unknown preset: InvalidArgument with a did-you-mean.
// A file that cannot be used is a failure, never InvalidArgument: NotFound or IoError when it
// cannot be read, FailedPrecondition when it is not a regular file, too large, or a config
// missing a field (base/read_file.h, AsFileFailure: exit 1).
// `unused` (optional) receives a config.json's keys the reader did not use (hf_config.h); a
// preset leaves it empty.
StatusOr<model::Model> ResolveModel(std::string_view name_or_path,
                                    std::vector<std::string>* unused = nullptr);

}  // namespace infralens::io

#endif  // INFRALENS_IO_MODEL_SOURCE_H_
