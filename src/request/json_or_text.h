// The renderer of a declared command (request/command.h) whose documents are its JSON and one text
// form ("table"): the three steps of MakeCommand end with it where nothing else decides.
#ifndef INFRALENS_REQUEST_JSON_OR_TEXT_H_
#define INFRALENS_REQUEST_JSON_OR_TEXT_H_

#include <functional>
#include <string>

#include "base/status.h"
#include "request/command.h"

namespace infralens::request {

// Renders `json(result, RunContext::json_indent)` when RunContext::format is "json", else
// `text(result)`. Query: the command's query, which neither reads.
template <class Query, class Result>
std::function<StatusOr<std::string>(const Result&, const Query&, const RunContext&)> JsonOrText(
    std::string (*json)(const Result&, int), std::string (*text)(const Result&)) {
  return
      [json, text](const Result& r, const Query&, const RunContext& ctx) -> StatusOr<std::string> {
        return ctx.format == "json" ? json(r, ctx.json_indent) : text(r);
      };
}

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_JSON_OR_TEXT_H_
