// Request parameters for the web API: percent-decoding, query strings and form bodies, and typed
// reading with errors that name the parameter. Transport-independent, so the fuzz target and the
// unit tests exercise exactly what the server runs.
#ifndef INFRALENS_SERVER_PARAMS_H_
#define INFRALENS_SERVER_PARAMS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infralens::server {

// A name=value pair as sent, decoded.
using ParamList = std::vector<std::pair<std::string, std::string>>;

// Decodes %XX escapes (and '+' as a space when plus_as_space). nullopt for a malformed escape or
// a decoded NUL byte.
std::optional<std::string> PercentDecode(std::string_view s, bool plus_as_space);

// Bounds on what one request may carry in parameters.
struct ParamLimits {
  size_t max_params = 64;
  size_t max_name_bytes = 64;
  size_t max_value_bytes = 1 << 20;
};

// A bad parameter: one message, and the parameter at fault ("" when no single one is).
struct ParamError {
  std::string message;
  std::string parameter;
};

// Parses "a=1&b=x%20y" (application/x-www-form-urlencoded; also the query string). Empty pieces
// ("a=1&&b=2") are skipped; a name without '=' has the value "".
std::optional<ParamList> ParseForm(std::string_view text, const ParamLimits& limits,
                                   ParamError* error);

// What an endpoint accepts: a canonical name, other spellings (the CLI's long flags), a help line
// and the default as text for the API index.
struct ParamSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string help;
  std::string default_text;
};

// Typed access to an endpoint's parameters. Construction maps every given name to its canonical
// spec name and records an error for an unknown or repeated parameter; each getter returns the
// default when the parameter is absent and records the first error it meets, so a handler reads
// everything and then checks error() once.
class ParamReader {
 public:
  ParamReader(const ParamList& given, const std::vector<ParamSpec>& specs);

  bool Given(std::string_view name) const { return Find(name) != nullptr; }
  std::string Text(std::string_view name, std::string_view def) const;
  // Integers in [min, max]; numbers finite and in [min, max].
  int Int(std::string_view name, int def, int min, int max);
  double Number(std::string_view name, double def, double min, double max);
  std::optional<double> OptionalNumber(std::string_view name, double min, double max);
  // One of `allowed` (case-insensitive; returned lower-case).
  std::string Choice(std::string_view name, std::string_view def,
                     const std::vector<std::string_view>& allowed);
  // "1", "true", "yes", "on" or "" (present without a value) are true; "0", "false", "no", "off"
  // false.
  bool Flag(std::string_view name);

  // Records an error found by the handler itself (the first one wins).
  void Fail(std::string parameter, std::string message);
  const std::optional<ParamError>& error() const { return error_; }
  // Every parameter given, by its canonical name, with its value as sent.
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }

 private:
  const std::string* Find(std::string_view name) const;

  std::vector<std::pair<std::string, std::string>> values_;  // canonical name, value
  std::optional<ParamError> error_;
};

}  // namespace infralens::server

#endif  // INFRALENS_SERVER_PARAMS_H_
