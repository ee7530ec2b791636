// Command-line flags for one subcommand. CLI11 does the parsing but lives only in flags.cc; every
// flag is read as text and converted here, so errors have one form: "--pp abc: expected an
// integer".
#ifndef INFRALENS_CLI_FLAGS_H_
#define INFRALENS_CLI_FLAGS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "request/flag_sink.h"

namespace infralens::cli {

class Flags : public request::FlagSink {
 public:
  // `usage` is the synopsis line, `examples` one example command per line.
  Flags(std::string command, std::string summary, std::string usage,
        std::vector<std::string> examples);
  ~Flags();
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  // `names` is CLI11's spelling: "-m,--microbatches". The default shown in help is the current
  // value.
  void Int(const std::string& names, int* out, const std::string& help) override;
  void Double(const std::string& names, double* out, const std::string& help) override;
  void String(const std::string& names, std::string* out, const std::string& help) override;
  void Bool(const std::string& names, bool* out, const std::string& help) override;
  void OptionalInt(const std::string& names, int* out, const std::string& help) override;
  // Positional arguments collected in order.
  void Positionals(const std::string& name, std::vector<std::string>* out,
                   const std::string& help) override;

  // Parses args (without the program and command names). InvalidArgument with one line on error.
  // After `--help` it returns ok with help_requested() true.
  Status Parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_requested_; }
  // The checks Parse makes before CLI11 sees the arguments: unknown flags (with "did you mean"),
  // a flag missing its value, an argument where the command takes none.
  Status CheckArguments(const std::vector<std::string>& args) const;
  // Whether the flag whose first long name is `name` (e.g. "--fb") appeared on the command line.
  bool Given(const std::string& name) const override;
  std::string Help() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool help_requested_ = false;
};

// The output flags of the commands that write a document: --format F, --json (the same as
// --format json) and -o,--output FILE, bound to the command's own variables.
void AddOutputFlags(Flags& flags, std::string* format, bool* json, std::string* output,
                    const std::string& format_help);
// -o,--output FILE alone, for commands with one output format.
void AddOutputFile(Flags& flags, std::string* output);
// After Parse: --json applied to `format`, "text" read as "table" where that is allowed, then
// InvalidArgument "--format x: expected a, b or c"
// (`allowed` in that order) unless `format` is one of them.
Status ResolveOutputFormat(std::string* format, bool json, const std::vector<std::string>& allowed);

using request::GivenFn;
using request::GivenOf;

}  // namespace infralens::cli

#endif  // INFRALENS_CLI_FLAGS_H_
