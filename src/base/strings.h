// Small string helpers shared by every parser: strict number parsing, case folding, suggestions.
#ifndef INFRALENS_BASE_STRINGS_H_
#define INFRALENS_BASE_STRINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infralens {

// Parses the whole of `s` (surrounding blanks allowed) as a base-10 integer; nullopt otherwise.
std::optional<int64_t> ParseInt(std::string_view s);
// Parses the whole of `s` as a finite double; nullopt for garbage, inf or nan.
std::optional<double> ParseDouble(std::string_view s);

std::string ToLower(std::string_view s);
std::string_view Trim(std::string_view s);
std::vector<std::string_view> Split(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// At most `max_bytes` of `s` for an error message: control characters (a newline inside a quoted
// CSV field) become '?', and a cut ends in "...", so the message stays one short line.
std::string Excerpt(std::string_view s, size_t max_bytes = 60);
// An error message of at most `max_bytes` (plus a short tail saying how long it was): a message
// may quote the value it refuses, and a 1 MiB argument was once echoed whole (issue 26). Cut at a
// UTF-8 character boundary; shorter messages are returned as they are.
std::string BoundedMessage(std::string_view m, size_t max_bytes = 1024);

// Edit distance counting an adjacent transposition as one edit, for "did you mean" suggestions.
// Inputs are command and flag names; it is quadratic in their length.
int EditDistance(std::string_view a, std::string_view b);
// The candidate closest to `word` if it is close enough to be a plausible typo, else "".
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);
// Lower-case letters and digits only, the rest dropped: the key names are matched by, so that
// "Llama-2-7B" and "llama2_7b" are one name.
std::string AlnumKey(std::string_view s);
// Whether `key` (an AlnumKey, not empty) is the key of `name` or of one of its `aliases`.
bool KeyNames(std::string_view key, std::string_view name, const std::vector<std::string>& aliases);
// "; did you mean 'NAME'?" for the one of `names` whose AlnumKey is the ClosestMatch of `key` (an
// AlnumKey), or "" when none is close.
std::string DidYouMean(std::string_view key, const std::vector<std::string>& names);
// `s` as XML text or a double-quoted attribute value (SVG, HTML): &, <, > and " as entities.
std::string XmlEscape(std::string_view s);

}  // namespace infralens

#endif  // INFRALENS_BASE_STRINGS_H_
