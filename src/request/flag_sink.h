// The request layer (src/request): what a command or an API endpoint asks of the engines, from
// parsed inputs to results and their documents, shared by the CLI (src/cli) and the web API
// (src/server) so that both validate the same way, give the same messages and write the same
// JSON. It sits above the engines (model, cluster, plan, io, ...) and below both front ends; it
// never includes either.
//
// This header is the one thing the request structs need of a front end: somewhere to declare
// their options (FlagSink; the CLI's Flags is one) and a way to ask whether an option was given
// (GivenFn; the CLI asks its Flags, the API its query parameters).
#ifndef INFRALENS_REQUEST_FLAG_SINK_H_
#define INFRALENS_REQUEST_FLAG_SINK_H_

#include <functional>
#include <string>
#include <vector>

namespace infralens::request {

// Whether an option was given, by its long flag name ("--nodes"). The API maps its parameter
// names (nodes, global_batch) to these.
using GivenFn = std::function<bool(const std::string& flag)>;

// Returns true when the caller wants the work abandoned (the server's time limit); long loops
// then return ResourceExhausted.
using StopFn = std::function<bool()>;

// Where a request struct declares its options: each binds a long flag (CLI11's spelling, e.g.
// "-m,--microbatches") to a field, with the field's current value as the default and one help
// text. Each option is declared in exactly one Register function, so that a name has one meaning,
// one default and one help text in every command (tests/flag_consistency_test.cc checks it).
class FlagSink {
 public:
  virtual ~FlagSink() = default;
  virtual void Int(const std::string& names, int* out, const std::string& help) = 0;
  virtual void Double(const std::string& names, double* out, const std::string& help) = 0;
  virtual void String(const std::string& names, std::string* out, const std::string& help) = 0;
  virtual void Bool(const std::string& names, bool* out, const std::string& help) = 0;
  // An integer whose absence means something the help states ("--gpus: or give --nodes"); no
  // default is shown, and *out keeps 0 when the option is absent.
  virtual void OptionalInt(const std::string& names, int* out, const std::string& help) = 0;
  // Whether the option whose first long name is `name` was given.
  virtual bool Given(const std::string& name) const = 0;
  // Arguments without a flag, in order (`name` as the CLI's help shows them). A front end
  // without positional arguments (the API's) leaves *out empty, or gives its request body as the
  // one argument (server::CommandRoute::body).
  virtual void Positionals(const std::string& /*name*/, std::vector<std::string>* /*out*/,
                           const std::string& /*help*/) {}
};

inline GivenFn GivenOf(const FlagSink& flags) {
  return [&flags](const std::string& flag) { return flags.Given(flag); };
}

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_FLAG_SINK_H_
