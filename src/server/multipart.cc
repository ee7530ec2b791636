#include "server/multipart.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "base/strings.h"
#include "server/http_parser.h"

namespace infralens::server {

namespace {

bool IsBoundaryChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\t') || u == 0x7f;
  });
}

struct HeaderParam {
  std::string name;  // lower-case
  std::string value;
};

// "type; a=b; c=\"d\"" -> the type (lower-case) and its parameters. nullopt with `error` set when
// the syntax is broken.
std::optional<std::pair<std::string, std::vector<HeaderParam>>> ParseParams(std::string_view v,
                                                                            std::string* error) {
  size_t i = 0;
  auto skip_ws = [&] {
    while (i < v.size() && (v[i] == ' ' || v[i] == '\t')) ++i;
  };
  skip_ws();
  const size_t t0 = i;
  while (i < v.size() && v[i] != ';') ++i;
  std::string type = ToLower(Trim(v.substr(t0, i - t0)));
  std::vector<HeaderParam> params;
  while (i < v.size()) {
    // v[i] == ';'
    ++i;
    skip_ws();
    if (i >= v.size()) break;  // a trailing ';'
    const size_t n0 = i;
    while (i < v.size() && IsHttpTokenChar(v[i])) ++i;
    if (i == n0) {
      *error = fmt::format("expected a parameter name at '{}'", Excerpt(v.substr(n0)));
      return std::nullopt;
    }
    std::string name = ToLower(v.substr(n0, i - n0));
    skip_ws();
    if (i >= v.size() || v[i] != '=') {
      *error = fmt::format("parameter '{}' has no '=' and value", Excerpt(name));
      return std::nullopt;
    }
    ++i;
    skip_ws();
    std::string value;
    if (i < v.size() && v[i] == '"') {
      ++i;
      bool closed = false;
      while (i < v.size()) {
        if (v[i] == '\\' && i + 1 < v.size()) {
          value += v[i + 1];
          i += 2;
        } else if (v[i] == '"') {
          ++i;
          closed = true;
          break;
        } else {
          value += v[i++];
        }
      }
      if (!closed) {
        *error = fmt::format("the quoted value of '{}' is not closed", Excerpt(name));
        return std::nullopt;
      }
    } else {
      const size_t v0 = i;
      while (i < v.size() && v[i] != ';' && v[i] != ' ' && v[i] != '\t') ++i;
      value = std::string(v.substr(v0, i - v0));
    }
    skip_ws();
    if (i < v.size() && v[i] != ';') {
      *error = fmt::format("unexpected '{}' after the value of '{}'", Excerpt(v.substr(i, 1)),
                           Excerpt(name));
      return std::nullopt;
    }
    for (const HeaderParam& p : params) {
      if (p.name == name) {
        *error = fmt::format("parameter '{}' is given twice", Excerpt(name));
        return std::nullopt;
      }
    }
    params.push_back({std::move(name), std::move(value)});
  }
  return std::make_pair(std::move(type), std::move(params));
}

const std::string* FindParam(const std::vector<HeaderParam>& params, std::string_view name) {
  for (const HeaderParam& p : params) {
    if (p.name == name) return &p.value;
  }
  return nullptr;
}

}  // namespace

bool IsMultipartContentType(std::string_view content_type) {
  const std::string type = ToLower(Trim(content_type.substr(0, content_type.find(';'))));
  return type == "multipart/form-data" || type == "multipart/mixed";
}

StatusOr<std::string> MultipartBoundary(std::string_view content_type) {
  if (!IsMultipartContentType(content_type)) {
    return InvalidArgument(fmt::format(
        "Content-Type '{}' is not multipart/form-data or multipart/mixed", Excerpt(content_type)));
  }
  std::string error;
  auto parsed = ParseParams(content_type, &error);
  if (!parsed) return InvalidArgument(fmt::format("Content-Type: {}", error));
  const std::string* b = FindParam(parsed->second, "boundary");
  if (b == nullptr) {
    return InvalidArgument(fmt::format("Content-Type {} has no boundary parameter", parsed->first));
  }
  if (b->empty() || b->size() > 70) {
    return InvalidArgument(
        fmt::format("the multipart boundary must have 1 to 70 characters; it has {}", b->size()));
  }
  for (char c : *b) {
    if (!IsBoundaryChar(c)) {
      return InvalidArgument(fmt::format(
          "the multipart boundary '{}' has the character '{}', which RFC 2046 does not allow",
          Excerpt(*b), Excerpt(std::string_view(&c, 1))));
    }
  }
  if (b->back() == ' ') return InvalidArgument("the multipart boundary must not end with a space");
  return *b;
}

StatusOr<std::vector<MultipartPart>> ParseMultipart(std::string_view body,
                                                    std::string_view content_type,
                                                    const MultipartLimits& limits) {
  ASSIGN_OR_RETURN(std::string boundary, MultipartBoundary(content_type));
  const std::string dash = "--" + boundary;
  const std::string crlf_dash = "\r\n" + dash;
  const std::boyer_moore_horspool_searcher search(crlf_dash.begin(), crlf_dash.end());
  // The next "\r\n--boundary" at or after `from`, or npos.
  auto find_delimiter = [&](size_t from) -> size_t {
    if (from > body.size()) return std::string_view::npos;
    auto it = std::search(body.begin() + static_cast<std::ptrdiff_t>(from), body.end(), search);
    return it == body.end() ? std::string_view::npos : static_cast<size_t>(it - body.begin());
  };
  auto fail = [&](std::string message) { return InvalidArgument("multipart body: " + message); };

  size_t pos;  // at a "--boundary"
  if (body.substr(0, dash.size()) == dash) {
    pos = 0;
  } else {
    const size_t d = find_delimiter(0);
    if (d == std::string_view::npos) {
      return fail(fmt::format(
          "no line '--{}' (the boundary of the Content-Type) in the {} bytes of the body",
          Excerpt(boundary), body.size()));
    }
    pos = d + 2;
  }

  std::vector<MultipartPart> parts;
  while (true) {
    const size_t n = parts.size() + 1;  // the part this delimiter opens, 1-based
    size_t p = pos + dash.size();
    if (body.substr(p, 2) == "--") {
      if (parts.empty()) return fail("the closing delimiter comes before any part");
      return parts;
    }
    while (p < body.size() && (body[p] == ' ' || body[p] == '\t')) ++p;
    if (body.substr(p, 2) != "\r\n") {
      if (p >= body.size()) {
        return fail(fmt::format("the body ends after the delimiter of part {} (truncated?)", n));
      }
      return fail(fmt::format(
          "the delimiter line of part {} is followed by '{}' instead of a line end (CRLF)", n,
          Excerpt(body.substr(p, 20))));
    }
    if (parts.size() >= limits.max_parts) {
      return fail(fmt::format("more than {} parts; send at most {} files per request",
                              limits.max_parts, limits.max_parts));
    }
    p += 2;

    // The part's headers, up to an empty line.
    MultipartPart part;
    bool has_disposition = false;
    const size_t h0 = p;
    while (true) {
      const size_t eol = body.find("\r\n", p);
      if (eol == std::string_view::npos || eol - h0 > limits.max_header_bytes) {
        if (eol == std::string_view::npos && body.size() - h0 <= limits.max_header_bytes) {
          return fail(
              fmt::format("the body ends inside the headers of part {} (no empty line after them; "
                          "truncated?)",
                          n));
        }
        return fail(
            fmt::format("the headers of part {} do not end (with an empty line) within "
                        "{} bytes",
                        n, limits.max_header_bytes));
      }
      if (eol == p) {
        p = eol + 2;
        break;
      }
      const std::string_view line = body.substr(p, eol - p);
      p = eol + 2;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        return fail(
            fmt::format("part {}: header line '{}' is not 'Name: value'", n, Excerpt(line)));
      }
      const std::string_view name = line.substr(0, colon);
      if (!std::all_of(name.begin(), name.end(), IsHttpTokenChar)) {
        return fail(fmt::format("part {}: '{}' is not a header name", n, Excerpt(name)));
      }
      const std::string_view value = Trim(line.substr(colon + 1));
      if (HasControl(value)) {
        return fail(fmt::format("part {}: control character in the {} header", n, Excerpt(name)));
      }
      const std::string lname = ToLower(name);
      if (lname == "content-disposition") {
        if (has_disposition)
          return fail(fmt::format("part {}: two Content-Disposition headers", n));
        has_disposition = true;
        std::string error;
        auto parsed = ParseParams(value, &error);
        if (!parsed) return fail(fmt::format("part {}: Content-Disposition: {}", n, error));
        if (parsed->first.empty() ||
            !std::all_of(parsed->first.begin(), parsed->first.end(), IsHttpTokenChar)) {
          return fail(fmt::format("part {}: Content-Disposition '{}' has no disposition type", n,
                                  Excerpt(value)));
        }
        for (const char* key : {"name", "filename"}) {
          const std::string* v = FindParam(parsed->second, key);
          if (v == nullptr) continue;
          if (v->size() > limits.max_name_bytes) {
            return fail(fmt::format("part {}: the {} is longer than {} bytes", n, key,
                                    limits.max_name_bytes));
          }
          if (HasControl(*v)) {
            return fail(fmt::format("part {}: control character in the {}", n, key));
          }
          if (std::string_view(key) == "name") {
            part.name = *v;
          } else {
            part.filename = *v;
            part.has_filename = true;
          }
        }
      } else if (lname == "content-type") {
        part.content_type = std::string(value);
      } else if (lname == "content-transfer-encoding") {
        const std::string enc = ToLower(value);
        if (enc != "binary" && enc != "8bit" && enc != "7bit") {
          return fail(fmt::format(
              "part {}: Content-Transfer-Encoding '{}' is not supported; send the file's bytes", n,
              Excerpt(value)));
        }
      }
    }

    // The content, up to the next delimiter. The search starts at the CRLF that ended the
    // headers: a part may end right after its headers ("--b\r\n\r\n--b--" has one empty part).
    const size_t end = find_delimiter(p - 2);
    if (end == std::string_view::npos) {
      return fail(fmt::format(
          "the body ends inside part {} without the closing delimiter '--{}--' (a truncated "
          "upload?)",
          n, Excerpt(boundary)));
    }
    // Always a view into the body, even when empty.
    part.body = end < p ? body.substr(end, 0) : body.substr(p, end - p);
    parts.push_back(std::move(part));
    pos = end + 2;
  }
}

std::string WriteMultipart(const std::vector<MultipartFile>& files, std::string* content_type) {
  // A boundary that occurs in no content: start from a fixed one and count up when needed.
  std::string boundary;
  for (uint64_t k = 0;; ++k) {
    boundary = fmt::format("infralens-part-boundary-{:08x}", k);
    const std::string needle = "--" + boundary;
    bool clash = std::any_of(files.begin(), files.end(), [&](const MultipartFile& f) {
      return f.content.find(needle) != std::string_view::npos;
    });
    if (!clash) break;
  }
  auto quoted = [](std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  size_t total = 0;
  for (const MultipartFile& f : files) total += f.content.size() + 200;
  std::string out;
  out.reserve(total + 64);
  for (const MultipartFile& f : files) {
    out += "--" + boundary + "\r\n";
    out += "Content-Disposition: form-data; name=" + quoted(f.name) +
           "; filename=" + quoted(f.filename) + "\r\n";
    if (!f.content_type.empty()) out += "Content-Type: " + f.content_type + "\r\n";
    out += "\r\n";
    out.append(f.content.data(), f.content.size());
    out += "\r\n";
  }
  out += "--" + boundary + "--\r\n";
  *content_type = "multipart/form-data; boundary=" + boundary;
  return out;
}

}  // namespace infralens::server
