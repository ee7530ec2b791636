// The web API adapter of a declared command (request/command.h): the endpoint's parameters are
// the command's options (named as the flags without dashes, '_' for '-'; ParamSpecsOf), read by a
// ParamSink with the API's bounds, and its answer is the command's JSON (or another of its
// documents named by `format`). The command runs with files refused, the call's deadline as its
// stop, and one-line JSON. From the declaration the adapter also takes:
// - the options of the API alone (CommandInfo::api_only) as parameters, less those of the CLI
//   alone (cli_only);
// - a positional argument, without a body, as the parameter named after it (NAME: `name`, one
//   value, at most 100 bytes);
// - `download=1` when the command names its document's file (Command::downloadable): the answer
//   comes with Content-Disposition: attachment; filename="STEM.EXT", the extension the format's;
// - the action limit per format (CommandInfo::action_scale over CommandRoute::max_actions);
// - for a cacheable command (CommandInfo::cacheable), each answer computed once per server, on
//   its own thread to its end whatever happens to the request that started it, and kept: a
//   request waits for it until its deadline or ServerLimits::cached_wait, whichever is later,
//   then gets a 503 saying so. Answers are kept by the query as read (canonical values: m=08
//   and microbatches=8 are one). At most kMaxCachedAnswers are kept (failures are not); a query
//   beyond them, or longer than kMaxCacheKeyBytes, is computed for its request alone. With
//   ServerLimits::warm_caches the default query in the route's first format starts computing
//   when the route is registered.
#ifndef INFRALENS_SERVER_COMMAND_API_H_
#define INFRALENS_SERVER_COMMAND_API_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "request/command.h"
#include "request/flag_sink.h"
#include "server/api.h"
#include "server/params.h"

namespace infralens::server {

// An API bound on one numeric parameter (inclusive).
struct ParamBound {
  std::string_view name;
  double min;
  double max;
};

// Reads each option a request struct declares from a call's parameters, as it is declared: the
// value is bound to the declared field (absent: the field's default stays). Numbers are checked
// against the bounds (the overrides first, then the API's table for the shared options, else any
// finite number in int or double range; the engines check the rest), text against a length
// (100 bytes for names; longer for the options that carry text the CLI reads from a file). The
// first bad parameter is the reader's error.
class ParamSink : public request::FlagSink {
 public:
  // `body`: the request body, given as the one positional argument when not empty.
  explicit ParamSink(ParamReader& p, std::vector<ParamBound> overrides = {},
                     std::string_view body = {})
      : p_(p), overrides_(std::move(overrides)), body_(body) {}

  void Int(const std::string& names, int* out, const std::string& help) override;
  void OptionalInt(const std::string& names, int* out, const std::string& help) override;
  void Double(const std::string& names, double* out, const std::string& help) override;
  void String(const std::string& names, std::string* out, const std::string& help) override;
  void Bool(const std::string& names, bool* out, const std::string& help) override;
  void Positionals(const std::string& name, std::vector<std::string>* out,
                   const std::string& help) override;
  bool Given(const std::string& name) const override;
  // Appends each option as read to *key ("name=value\n", '~' for a default), the query's
  // canonical form (the API's cache key of a cacheable command).
  void RecordInto(std::string* key) { record_ = key; }

 private:
  void Record(const std::string& name, const std::string& value);
  ParamBound BoundOf(std::string_view name, double min, double max) const;
  ParamReader& p_;
  std::vector<ParamBound> overrides_;
  std::string_view body_;
  std::string* record_ = nullptr;
};

// The API's parameter name of a flag's spellings: "--global-batch" -> global_batch,
// "-m,--microbatches" -> microbatches.
std::string ParamNameOf(const std::string& names);

struct CommandRoute {
  std::string path;  // "/api/memory"
  std::vector<std::string> methods = {"GET", "POST"};
  // The documents the API answers; more than one adds a `format` parameter ([0] the default).
  std::vector<std::string> formats = {"json"};
  std::string format_help;         // the `format` parameter's help; "": the formats listed
  std::vector<ParamBound> bounds;  // this endpoint's own bounds, over the shared ones
  bool light = false;              // Endpoint::light
  // A layout search (plan): the call's search options (RequestSearchOptions: the threads, a stop
  // that also counts layouts), the server's GPU bound, a stopped search answering with its
  // ranking so far (so an answer computed is sent even past the deadline), and SearchError's
  // message when it stopped before any layout that fits.
  bool search = false;
  // The command's input is the request body (POST only): its positional argument, the text the
  // CLI reads from the file it names (RunContext::ReadInput).
  bool body = false;
  // RunContext::max_actions (ServerLimits' figure), times the command's action_scale for the
  // format asked for.
  int64_t max_actions = 0;
};

// The answers a cacheable command's route keeps, and the longest query (its options as read,
// ParamSink::RecordInto, and the format) whose answer is kept.
inline constexpr size_t kMaxCachedAnswers = 64;
inline constexpr size_t kMaxCacheKeyBytes = 1024;

// The most actions a run answering `format` may simulate: `max_actions` times the command's
// action_scale for that format.
int64_t ActionLimitOf(const request::CommandInfo& info, std::string_view format,
                      int64_t max_actions);

// The media type of a document format (json: application/json, svg: image/svg+xml, ...).
std::string_view ContentTypeOf(std::string_view format);
// A document's file extension by its format (chrome: .trace.json, ascii: .txt, ...).
std::string_view FileExtensionOf(std::string_view format);

// Registers `route.path` answering `command`.
void RegisterCommand(Api& api, const request::Command& command, CommandRoute route);

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_COMMAND_API_H_
