// A small reader of the bash subset launch scripts use (see the header). It never runs a
// command: it tokenises, keeps the variables and arrays the script assigns, follows if/else with
// the conditions it can decide, and picks the training command out.
#include "io/launch_script.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "base/strings.h"

namespace infralens::io {

namespace {

// Every expanded string and array stays below this (a script's own text is at most 1 MiB).
constexpr size_t kMaxValueBytes = size_t{4} << 20;
constexpr size_t kMaxScriptTokens = size_t{1} << 18;
constexpr int kMaxDepth = 16;  // nested ${X:-${Y:-...}} defaults and if blocks

enum class Kind { kWord, kSep, kOpenArray, kClose, kOr, kAnd };
struct Token {
  Kind kind;
  std::string text;  // raw, quotes kept (kWord), or "NAME=" / "NAME+=" (kOpenArray)
};

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The assignment prefix "NAME=" or "NAME+=" of a raw word, or "" when it is not one.
std::string AssignmentPrefix(std::string_view w) {
  if (w.empty() || !IsNameStart(w[0])) return "";
  size_t i = 1;
  while (i < w.size() && IsNameChar(w[i])) ++i;
  if (i < w.size() && w[i] == '=') return std::string(w.substr(0, i + 1));
  if (i + 1 < w.size() && w[i] == '+' && w[i + 1] == '=') return std::string(w.substr(0, i + 2));
  return "";
}

class Lexer {
 public:
  Lexer(std::string_view s, std::string_view origin) : s_(s), origin_(origin) {}

  StatusOr<std::vector<Token>> Run() {
    std::vector<Token> out;
    std::string cur;
    bool in_word = false;
    auto end_word = [&] {
      if (in_word) out.push_back({Kind::kWord, std::move(cur)});
      cur.clear();
      in_word = false;
    };
    while (i_ < s_.size()) {
      if (out.size() > kMaxScriptTokens) return Bad("more than 262144 words");
      const char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        i_ += 2;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        end_word();
        ++i_;
        continue;
      }
      if (c == '\n' || c == ';') {
        end_word();
        out.push_back({Kind::kSep, ""});
        ++i_;
        if (c == '\n' && !heredoc_.empty()) SkipHeredoc();
        continue;
      }
      if (c == '#' && !in_word) {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '|' ||
          (c == '&' && !(in_word && !cur.empty() && (cur.back() == '>' || cur.back() == '<')))) {
        end_word();
        const bool twice = i_ + 1 < s_.size() && s_[i_ + 1] == c;
        out.push_back({twice ? (c == '|' ? Kind::kOr : Kind::kAnd) : Kind::kSep, ""});
        i_ += twice ? 2 : 1;
        continue;
      }
      if (c == '(') {
        if (in_word && !AssignmentPrefix(cur).empty() && AssignmentPrefix(cur) == cur) {
          out.push_back({Kind::kOpenArray, std::move(cur)});
          cur.clear();
          in_word = false;
        } else {
          end_word();
          out.push_back({Kind::kWord, "("});
        }
        ++i_;
        continue;
      }
      if (c == ')') {
        end_word();
        out.push_back({Kind::kClose, ""});
        ++i_;
        continue;
      }
      if (c == '<' && !in_word && i_ + 1 < s_.size() && s_[i_ + 1] == '<') {
        RETURN_IF_ERROR(ReadHeredocDelimiter());
        continue;
      }
      in_word = true;
      const size_t start = i_;
      if (c == '\'') {
        const size_t e = s_.find('\'', i_ + 1);
        if (e == std::string_view::npos) return Bad("unterminated single quote");
        i_ = e + 1;
      } else if (c == '"') {
        RETURN_IF_ERROR(SkipDoubleQuoted());
      } else if (c == '$' && i_ + 1 < s_.size() && (s_[i_ + 1] == '(' || s_[i_ + 1] == '{')) {
        RETURN_IF_ERROR(SkipBalanced(i_ + 1));
      } else if (c == '\\' && i_ + 1 < s_.size()) {
        i_ += 2;
      } else {
        ++i_;
      }
      cur.append(s_.substr(start, i_ - start));
      if (cur.size() > kMaxValueBytes) return Bad("a word longer than 4 MiB");
    }
    end_word();
    return out;
  }

 private:
  Status Bad(std::string_view what) const {
    return InvalidArgument(fmt::format("{}: {}", origin_, what));
  }

  // s_[i_] is '"': moves past the closing quote (escapes and $(...) / ${...} inside honoured).
  Status SkipDoubleQuoted() {
    size_t j = i_ + 1;
    while (j < s_.size() && s_[j] != '"') {
      if (s_[j] == '\\') {
        j += 2;
      } else if (s_[j] == '$' && j + 1 < s_.size() && (s_[j + 1] == '(' || s_[j + 1] == '{')) {
        i_ = j + 1;
        RETURN_IF_ERROR(SkipBalanced(j + 1));
        j = i_;
      } else {
        ++j;
      }
    }
    if (j >= s_.size()) return Bad("unterminated double quote");
    i_ = j + 1;
    return Status::Ok();
  }

  // s_[open] is '(' or '{': moves i_ past its match, quotes inside skipped.
  Status SkipBalanced(size_t open) {
    const char o = s_[open], cl = o == '(' ? ')' : '}';
    int depth = 0;
    size_t j = open;
    while (j < s_.size()) {
      const char c = s_[j];
      if (c == '\\') {
        j += 2;
        continue;
      }
      if (c == '\'') {
        const size_t e = s_.find('\'', j + 1);
        if (e == std::string_view::npos) return Bad("unterminated single quote");
        j = e + 1;
        continue;
      }
      if (c == '"') {
        ++j;
        while (j < s_.size() && s_[j] != '"') j += s_[j] == '\\' ? 2 : 1;
        ++j;
        continue;
      }
      if (c == o) ++depth;
      if (c == cl && --depth == 0) {
        i_ = j + 1;
        return Status::Ok();
      }
      if (depth > 64) return Bad("parentheses nested deeper than 64");
      ++j;
    }
    return Bad(fmt::format("unterminated {}{}", o == '(' ? "$" : "$", o));
  }

  // At "<<": the delimiter word (quotes and a leading '-' dropped); the body is skipped at the
  // end of this line.
  Status ReadHeredocDelimiter() {
    i_ += 2;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
    std::string d;
    while (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && s_[i_] != ';') {
      if (s_[i_] != '\'' && s_[i_] != '"') d += s_[i_];
      ++i_;
    }
    if (d.empty()) return Bad("<< without a here-document delimiter");
    heredoc_ = d;
    return Status::Ok();
  }

  void SkipHeredoc() {
    while (i_ < s_.size()) {
      size_t e = s_.find('\n', i_);
      if (e == std::string_view::npos) e = s_.size();
      const bool end = Trim(s_.substr(i_, e - i_)) == heredoc_;
      i_ = std::min(e + 1, s_.size());
      if (end) break;
    }
    heredoc_.clear();
  }

  std::string_view s_, origin_;
  size_t i_ = 0;
  std::string heredoc_;
};

// One statement: its words, and for "NAME=(" the array's element words.
struct Statement {
  std::vector<Token> words;  // kWord, kOr, kAnd
  std::string array_target;  // "NAME=" or "NAME+=" when the statement is an array assignment
  std::vector<std::string> elements;
};

class Shell {
 public:
  explicit Shell(std::string_view origin) : origin_(origin) {}

  Status Run(const std::vector<Token>& tokens) {
    std::vector<Statement> stmts(1);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const Token& t = tokens[i];
      if (t.kind == Kind::kSep) {
        stmts.emplace_back();
      } else if (t.kind == Kind::kOpenArray) {
        Statement& s = stmts.back();
        s.array_target = t.text;
        size_t j = i + 1;
        for (; j < tokens.size() && tokens[j].kind != Kind::kClose; ++j) {
          if (tokens[j].kind == Kind::kWord) s.elements.push_back(tokens[j].text);
        }
        if (j >= tokens.size()) {
          return InvalidArgument(fmt::format("{}: {}( without its closing )", origin_, t.text));
        }
        i = j;
      } else if (t.kind == Kind::kClose) {
        stmts.back().words.push_back({Kind::kWord, ")"});
      } else {
        stmts.back().words.push_back(t);
      }
    }
    for (const Statement& s : stmts) RETURN_IF_ERROR(Execute(s));
    if (!frames_.empty()) return InvalidArgument(fmt::format("{}: if without fi", origin_));
    return Status::Ok();
  }

  StatusOr<std::string> Command() const {
    if (!command_.empty()) {
      std::vector<std::string> q;
      for (const std::string& w : command_) q.push_back(ShellQuote(w));
      return Join(q, " ");
    }
    // No command runs the script directly: a variable holding the command (TRAINING_CMD="...").
    for (auto it = assigned_.rbegin(); it != assigned_.rend(); ++it) {
      auto v = scalars_.find(*it);
      if (v != scalars_.end() && HasTrainingScript(SplitWords(v->second))) return v->second;
    }
    return InvalidArgument(
        fmt::format("{}: no training command: no command or variable runs a .py script with -- "
                    "flags (pretrain_gpt.py ...)",
                    origin_));
  }

  std::vector<std::string> notes;

 private:
  struct Frame {
    bool outer;  // whether the enclosing code runs
    bool cond;   // whether this branch runs
    bool taken;  // whether a branch of this if ran
  };

  bool Active() const { return frames_.empty() || (frames_.back().outer && frames_.back().cond); }

  void Note(std::string n) {
    if (noted_.insert(n).second && notes.size() < 32) notes.push_back(std::move(n));
  }

  static std::string ShellQuote(const std::string& w) {
    std::string r = "'";
    for (char c : w) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return r + "'";
  }

  static std::vector<std::string> SplitWords(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!cur.empty()) out.push_back(std::move(cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
  }

  static bool EndsWithPy(const std::string& w) {
    return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0;
  }

  static bool HasTrainingScript(const std::vector<std::string>& words) {
    for (size_t i = 0; i < words.size(); ++i) {
      if (!EndsWithPy(words[i])) continue;
      for (size_t j = i + 1; j < words.size(); ++j) {
        if (words[j].rfind("--", 0) == 0) return true;
      }
    }
    return false;
  }

  // ---- Expansion ----

  // The words a raw word expands to: quotes removed, $-expansions substituted, unquoted
  // expansions split on whitespace, "${A[@]}" one word per element.
  StatusOr<std::vector<std::string>> Expand(std::string_view raw, int depth = 0) {
    if (depth > kMaxDepth) {
      return InvalidArgument(
          fmt::format("{}: expansions nested deeper than {}", origin_, kMaxDepth));
    }
    std::vector<std::string> fields;
    std::string cur;
    bool have = false;
    // Appends expansion results: `split` splits each on whitespace (unquoted); each element after
    // the first starts a new word.
    auto add = [&](const std::vector<std::string>& values, bool split) {
      bool first = true;
      for (const std::string& v : values) {
        std::vector<std::string> pieces = split ? SplitWords(v) : std::vector<std::string>{v};
        if (split && !v.empty() && std::isspace(static_cast<unsigned char>(v.front())) && have) {
          fields.push_back(std::move(cur));
          cur.clear();
          have = false;
        }
        for (size_t k = 0; k < pieces.size(); ++k) {
          if ((!first || k > 0) && (have || !cur.empty())) {
            fields.push_back(std::move(cur));
            cur.clear();
          }
          cur += pieces[k];
          have = true;
        }
        if (!split && pieces.empty()) have = true;
        first = false;
      }
    };
    size_t i = 0;
    while (i < raw.size()) {
      const char c = raw[i];
      if (c == '\'') {
        const size_t e = raw.find('\'', i + 1);
        const size_t end = e == std::string_view::npos ? raw.size() : e;
        cur.append(raw.substr(i + 1, end - i - 1));
        have = true;
        i = end + 1;
      } else if (c == '"') {
        have = true;
        ++i;
        while (i < raw.size() && raw[i] != '"') {
          if (raw[i] == '\\' && i + 1 < raw.size() &&
              (raw[i + 1] == '"' || raw[i + 1] == '\\' || raw[i + 1] == '$' || raw[i + 1] == '`')) {
            cur += raw[i + 1];
            i += 2;
          } else if (raw[i] == '$') {
            ASSIGN_OR_RETURN(auto values, Dollar(raw, i, depth));
            add(values, false);
          } else {
            cur += raw[i++];
          }
        }
        ++i;
      } else if (c == '\\' && i + 1 < raw.size()) {
        cur += raw[i + 1];
        have = true;
        i += 2;
      } else if (c == '$') {
        ASSIGN_OR_RETURN(auto values, Dollar(raw, i, depth));
        add(values, true);
      } else {
        cur += c;
        have = true;
        ++i;
      }
      if (cur.size() > kMaxValueBytes || fields.size() > kMaxScriptTokens) {
        return InvalidArgument(fmt::format("{}: an expansion larger than 4 MiB", origin_));
      }
    }
    if (have || !cur.empty()) fields.push_back(std::move(cur));
    return fields;
  }

  StatusOr<std::string> ExpandToString(std::string_view raw, int depth) {
    ASSIGN_OR_RETURN(auto words, Expand(raw, depth + 1));
    return Join(words, " ");
  }

  // raw[i] is '$': the values it expands to (one for a scalar, the elements for ${A[@]}); i moves
  // past the expansion.
  StatusOr<std::vector<std::string>> Dollar(std::string_view raw, size_t& i, int depth) {
    const size_t start = i;
    if (i + 1 >= raw.size()) {
      ++i;
      return std::vector<std::string>{"$"};
    }
    const char n = raw[i + 1];
    if (n == '(') {  // $(...) and $((...)): kept as written
      size_t j = i + 1;
      int d = 0;
      for (; j < raw.size(); ++j) {
        if (raw[j] == '(') ++d;
        if (raw[j] == ')' && --d == 0) break;
      }
      i = std::min(j + 1, raw.size());
      const std::string text(raw.substr(start, i - start));
      Note(fmt::format("{} is not run; kept as written", Excerpt(text)));
      return std::vector<std::string>{text};
    }
    if (n == '{') {
      size_t j = i + 2;
      int d = 1;
      for (; j < raw.size(); ++j) {
        if (raw[j] == '{') ++d;
        if (raw[j] == '}' && --d == 0) break;
      }
      const std::string_view body = raw.substr(i + 2, std::min(j, raw.size()) - i - 2);
      i = std::min(j + 1, raw.size());
      return Braced(body, depth);
    }
    if (std::isdigit(static_cast<unsigned char>(n)) || n == '@' || n == '*' || n == '#' ||
        n == '?' || n == '$' || n == '!' || n == '-') {
      i += 2;
      if (std::isdigit(static_cast<unsigned char>(n))) {
        Note(
            fmt::format("positional parameter ${} is empty (the script is read without "
                        "arguments)",
                        n));
        return std::vector<std::string>{""};
      }
      return std::vector<std::string>{n == '#' ? "0" : ""};
    }
    if (!IsNameStart(n)) {
      ++i;
      return std::vector<std::string>{"$"};
    }
    size_t j = i + 1;
    while (j < raw.size() && IsNameChar(raw[j])) ++j;
    const std::string name(raw.substr(i + 1, j - i - 1));
    i = j;
    return std::vector<std::string>{Scalar(name, true)};
  }

  // The value of NAME as a scalar (an array's first element); "" and a note when unset.
  std::string Scalar(const std::string& name, bool note_unset) {
    if (auto it = scalars_.find(name); it != scalars_.end()) return it->second;
    if (auto it = arrays_.find(name); it != arrays_.end())
      return it->second.empty() ? "" : it->second.front();
    if (note_unset) Note(fmt::format("${} is not set by the script: taken as empty", name));
    return "";
  }

  bool IsSet(const std::string& name) const {
    return scalars_.count(name) > 0 || arrays_.count(name) > 0;
  }

  // The inside of ${...}.
  StatusOr<std::vector<std::string>> Braced(std::string_view body, int depth) {
    if (!body.empty() && body[0] == '#') {  // ${#NAME}: length
      return std::vector<std::string>{
          std::to_string(Scalar(std::string(body.substr(1)), false).size())};
    }
    size_t k = 0;
    while (k < body.size() && IsNameChar(body[k])) ++k;
    const std::string name(body.substr(0, k));
    const bool positional = !name.empty() && std::isdigit(static_cast<unsigned char>(name[0]));
    std::string_view rest = body.substr(k);
    if (rest == "[@]" || rest == "[*]") {
      if (auto it = arrays_.find(name); it != arrays_.end()) {
        if (rest == "[*]") return std::vector<std::string>{Join(it->second, " ")};
        return it->second;
      }
      if (auto it = scalars_.find(name); it != scalars_.end())
        return std::vector<std::string>{it->second};
      Note(fmt::format("${{{}[@]}} is not set by the script: taken as empty", name));
      return std::vector<std::string>{};
    }
    if (!rest.empty() && rest[0] == '[') {  // ${A[n]}
      const size_t close = rest.find(']');
      const auto idx = ParseInt(rest.substr(1, close == std::string_view::npos ? 0 : close - 1));
      auto it = arrays_.find(name);
      if (it != arrays_.end() && idx && *idx >= 0 && *idx < static_cast<int64_t>(it->second.size()))
        return std::vector<std::string>{it->second[static_cast<size_t>(*idx)]};
      return std::vector<std::string>{""};
    }
    const bool set = !positional && IsSet(name);
    const std::string value = set ? Scalar(name, false) : "";
    for (std::string_view op : {":-", ":=", ":+", "-", "=", "+"}) {
      if (rest.substr(0, op.size()) != op) continue;
      const bool colon = op[0] == ':';
      const char kind = op.back();
      const bool use_value = set && (!colon || !value.empty());
      const std::string_view word = rest.substr(op.size());
      if (kind == '+') {
        if (!use_value) return std::vector<std::string>{""};
        ASSIGN_OR_RETURN(std::string w, ExpandToString(word, depth));
        return std::vector<std::string>{w};
      }
      if (use_value) return std::vector<std::string>{value};
      ASSIGN_OR_RETURN(std::string def, ExpandToString(word, depth));
      if (kind == '=' && !positional) Assign(name, def);
      return std::vector<std::string>{def};
    }
    if (!rest.empty()) {
      Note(fmt::format("${{{}}}: this form is not expanded; taken as empty", Excerpt(body)));
      return std::vector<std::string>{""};
    }
    if (positional) {
      Note(
          fmt::format("positional parameter ${{{}}} is empty (the script is read without "
                      "arguments)",
                      name));
      return std::vector<std::string>{""};
    }
    return std::vector<std::string>{Scalar(name, true)};
  }

  void Assign(const std::string& name, std::string value) {
    arrays_.erase(name);
    scalars_[name] = std::move(value);
    assigned_.push_back(name);
  }

  // ---- Statements ----

  Status Execute(const Statement& s) {
    std::vector<Token> w = s.words;
    // Compound-command keywords at the front.
    while (!w.empty() && w.front().kind == Kind::kWord &&
           (w.front().text == "then" || w.front().text == "do" || w.front().text == "{" ||
            w.front().text == "}" || w.front().text == "else" || w.front().text == "fi" ||
            w.front().text == "if" || w.front().text == "elif")) {
      const std::string kw = w.front().text;
      if (kw == "if" || kw == "elif") {
        std::vector<Token> cond(w.begin() + 1, w.end());
        size_t then = cond.size();
        for (size_t k = 0; k < cond.size(); ++k) {
          if (cond[k].kind == Kind::kWord && cond[k].text == "then") {
            then = k;
            break;
          }
        }
        std::vector<Token> after(
            cond.begin() + static_cast<std::ptrdiff_t>(std::min(then + 1, cond.size())),
            cond.end());
        cond.resize(then);
        if (kw == "if") {
          if (frames_.size() >= kMaxDepth * 4) {
            return InvalidArgument(fmt::format("{}: if blocks nested too deep", origin_));
          }
          const bool outer = Active();
          ASSIGN_OR_RETURN(const bool c, outer ? Condition(cond) : StatusOr<bool>(false));
          frames_.push_back({outer, c, c});
        } else {
          if (frames_.empty()) return InvalidArgument(fmt::format("{}: elif without if", origin_));
          Frame& f = frames_.back();
          ASSIGN_OR_RETURN(const bool c,
                           f.outer && !f.taken ? Condition(cond) : StatusOr<bool>(false));
          f.cond = !f.taken && c;
          f.taken = f.taken || f.cond;
        }
        w = after;
        continue;
      }
      if (kw == "else") {
        if (frames_.empty()) return InvalidArgument(fmt::format("{}: else without if", origin_));
        Frame& f = frames_.back();
        f.cond = !f.taken;
        f.taken = true;
      } else if (kw == "fi") {
        if (frames_.empty()) return InvalidArgument(fmt::format("{}: fi without if", origin_));
        frames_.pop_back();
      }
      w.erase(w.begin());
    }
    if (!Active()) return Status::Ok();
    // Declarations: export / local / declare / readonly NAME=value (their -options skipped).
    if (!w.empty() && w.front().kind == Kind::kWord &&
        (w.front().text == "export" || w.front().text == "local" || w.front().text == "declare" ||
         w.front().text == "readonly" || w.front().text == "typeset")) {
      w.erase(w.begin());
      while (!w.empty() && w.front().text.rfind("-", 0) == 0) w.erase(w.begin());
      if (w.empty() && s.array_target.empty()) return Status::Ok();
    }
    if (!s.array_target.empty()) {
      const bool append =
          s.array_target.size() >= 2 && s.array_target[s.array_target.size() - 2] == '+';
      const std::string name = s.array_target.substr(0, s.array_target.size() - (append ? 2 : 1));
      std::vector<std::string> values;
      for (const std::string& e : s.elements) {
        ASSIGN_OR_RETURN(auto words, Expand(e));
        values.insert(values.end(), words.begin(), words.end());
      }
      std::vector<std::string>& arr = arrays_[name];
      if (!append) {
        arr.clear();
        if (auto it = scalars_.find(name); it != scalars_.end()) scalars_.erase(it);
      } else if (auto it = scalars_.find(name); it != scalars_.end()) {
        arr.insert(arr.begin(), it->second);
        scalars_.erase(it);
      }
      arr.insert(arr.end(), values.begin(), values.end());
      if (arr.size() > kMaxScriptTokens)
        return InvalidArgument(fmt::format("{}: array {} too large", origin_, name));
      return Status::Ok();
    }
    // Leading assignments; alone they set variables, before a command they are its environment.
    size_t k = 0;
    while (k < w.size() && w[k].kind == Kind::kWord && !AssignmentPrefix(w[k].text).empty()) ++k;
    if (k == w.size()) {
      for (const Token& t : w) {
        const std::string prefix = AssignmentPrefix(t.text);
        const bool append = prefix.size() >= 2 && prefix[prefix.size() - 2] == '+';
        const std::string name = prefix.substr(0, prefix.size() - (append ? 2 : 1));
        ASSIGN_OR_RETURN(std::string v,
                         ExpandToString(std::string_view(t.text).substr(prefix.size()), 0));
        Assign(name, append ? Scalar(name, false) + v : v);
      }
      return Status::Ok();
    }
    std::vector<std::string> words;
    for (size_t m = k; m < w.size(); ++m) {
      if (w[m].kind != Kind::kWord) break;  // a || or && list: its first command only
      ASSIGN_OR_RETURN(auto e, Expand(w[m].text));
      words.insert(words.end(), e.begin(), e.end());
      if (words.size() > kMaxScriptTokens)
        return InvalidArgument(fmt::format("{}: a command of too many words", origin_));
    }
    if (words.empty()) return Status::Ok();
    if (words[0] == "unset") {
      for (size_t m = 1; m < words.size(); ++m) {
        scalars_.erase(words[m]);
        arrays_.erase(words[m]);
      }
      return Status::Ok();
    }
    if (words[0] == "for" || words[0] == "while" || words[0] == "until" || words[0] == "case") {
      Note(fmt::format("'{}' loops and cases are not followed", words[0]));
      return Status::Ok();
    }
    if (command_.empty() && words[0] != "echo" && words[0] != "printf" &&
        HasTrainingScript(words)) {
      command_ = std::move(words);
    }
    return Status::Ok();
  }

  // A condition: [ ... ] / [[ ... ]] / test ..., with ! and joined by || and &&, left to right.
  StatusOr<bool> Condition(const std::vector<Token>& cond) {
    bool result = false;
    Kind op = Kind::kOr;
    bool first = true;
    size_t i = 0;
    while (i <= cond.size()) {
      size_t j = i;
      while (j < cond.size() && cond[j].kind == Kind::kWord) ++j;
      std::vector<Token> group(cond.begin() + static_cast<std::ptrdiff_t>(i),
                               cond.begin() + static_cast<std::ptrdiff_t>(j));
      ASSIGN_OR_RETURN(const bool g, Test(group));
      if (first) {
        result = g;
      } else {
        result = op == Kind::kOr ? (result || g) : (result && g);
      }
      first = false;
      if (j >= cond.size()) break;
      op = cond[j].kind;
      i = j + 1;
    }
    return result;
  }

  StatusOr<bool> Test(const std::vector<Token>& group) {
    std::vector<std::string> raw;
    for (const Token& t : group) raw.push_back(t.text);
    bool negate = false;
    if (!raw.empty() && raw.front() == "!") {
      negate = true;
      raw.erase(raw.begin());
    }
    const bool bracket = raw.size() >= 2 && ((raw.front() == "[" && raw.back() == "]") ||
                                             (raw.front() == "[[" && raw.back() == "]]"));
    const bool test_cmd = !raw.empty() && raw.front() == "test";
    if (!bracket && !test_cmd) {
      Note(fmt::format("condition '{}' is not evaluated: taken as false", Excerpt(Join(raw, " "))));
      return false;
    }
    std::vector<std::string> args;
    for (size_t k = 1; k + (bracket ? 1 : 0) < raw.size(); ++k) {
      // Each operand is one word, quoted or not ("$X" empty is an empty operand).
      ASSIGN_OR_RETURN(auto e, Expand(raw[k]));
      args.push_back(Join(e, " "));
    }
    bool inner_negate = false;
    if (!args.empty() && args.front() == "!") {
      inner_negate = true;
      args.erase(args.begin());
    }
    std::optional<bool> r;
    if (args.size() == 1) {
      r = !args[0].empty();
    } else if (args.size() == 2) {
      const std::string& o = args[0];
      if (o == "-z") r = args[1].empty();
      if (o == "-n") r = !args[1].empty();
      if (o == "-f" || o == "-d" || o == "-e" || o == "-r" || o == "-x" || o == "-s") {
        Note(fmt::format("file test {} {} taken as true", o, Excerpt(args[1])));
        r = true;
      }
    } else if (args.size() == 3) {
      const std::string& o = args[1];
      if (o == "=" || o == "==") r = args[0] == args[2];
      if (o == "!=") r = args[0] != args[2];
      const auto a = ParseInt(args[0]), b = ParseInt(args[2]);
      if (a && b) {
        if (o == "-eq") r = *a == *b;
        if (o == "-ne") r = *a != *b;
        if (o == "-lt") r = *a < *b;
        if (o == "-le") r = *a <= *b;
        if (o == "-gt") r = *a > *b;
        if (o == "-ge") r = *a >= *b;
      }
    }
    if (!r) {
      Note(fmt::format("condition '{}' is not evaluated: taken as false", Excerpt(Join(raw, " "))));
      return false;
    }
    return *r != (negate != inner_negate);
  }

  std::string_view origin_;
  std::map<std::string, std::string> scalars_;
  std::map<std::string, std::vector<std::string>> arrays_;
  std::vector<std::string> assigned_;  // scalar names in assignment order
  std::vector<Frame> frames_;
  std::vector<std::string> command_;
  std::set<std::string> noted_;
};

}  // namespace

StatusOr<ExpandedLaunch> ExpandLaunchScript(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxLaunchScriptBytes) {
    return InvalidArgument(fmt::format("{}: {} bytes, larger than the limit of {} bytes", origin,
                                       text.size(), kMaxLaunchScriptBytes));
  }
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(text, origin).Run());
  Shell sh(origin);
  RETURN_IF_ERROR(sh.Run(tokens));
  ExpandedLaunch out;
  ASSIGN_OR_RETURN(out.command, sh.Command());
  out.notes = std::move(sh.notes);
  return out;
}

}  // namespace infralens::io
