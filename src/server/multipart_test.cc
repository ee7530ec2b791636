// The multipart parser on bodies written by hand (as curl and browsers send them) and on the
// broken ones an upload can produce; the writer round-trips through it.
#include "server/multipart.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace infralens::server {
namespace {

const std::string kType = "multipart/form-data; boundary=------------------------d74496d66958873e";
const std::string kDash = "--------------------------d74496d66958873e";

std::string FilePart(const std::string& filename, const std::string& content) {
  return kDash + "\r\nContent-Disposition: form-data; name=\"trace\"; filename=\"" + filename +
         "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + content + "\r\n";
}

std::string Error(std::string_view body, std::string_view type = kType) {
  auto r = ParseMultipart(body, type);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

TEST(MultipartTest, ReadsWhatCurlSends) {
  // curl -F trace=@a.json -F trace=@b.json.gz: parts in order, contents byte for byte (CR, LF,
  // NUL and boundary-like text inside a file are content).
  const std::string a = "{\"traceEvents\": []}\r\n--not-the-boundary\r\n";
  const std::string b = std::string("\x1f\x8b\x08\x00\r\n\0zz", 9);
  const std::string body = "preamble is ignored\r\n" + FilePart("a.json", a) +
                           FilePart("b.json.gz", b) + kDash + "--\r\nepilogue too";
  auto parts = ParseMultipart(body, kType);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "trace");
  EXPECT_EQ((*parts)[0].filename, "a.json");
  EXPECT_TRUE((*parts)[0].has_filename);
  EXPECT_EQ((*parts)[0].content_type, "application/octet-stream");
  EXPECT_EQ((*parts)[0].body, a);
  EXPECT_EQ((*parts)[1].filename, "b.json.gz");
  EXPECT_EQ((*parts)[1].body, b);
}

TEST(MultipartTest, BoundaryQuotedMixedAndEmptyParts) {
  // A quoted boundary with a space (RFC 2046 allows it), multipart/mixed, a part without
  // headers, an empty part and one that ends right after its headers.
  const std::string type = "Multipart/Mixed; charset=x; boundary=\"a b:c\"";
  const std::string body =
      "--a b:c\r\n\r\nno headers\r\n--a b:c\r\nContent-Disposition: attachment; "
      "filename=\"\\\"q\\\".json\"\r\n\r\n\r\n--a b:c\r\n\r\n--a b:c--";
  auto parts = ParseMultipart(body, type);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[0].body, "no headers");
  EXPECT_FALSE((*parts)[0].has_filename);
  EXPECT_EQ((*parts)[1].filename, "\"q\".json");
  EXPECT_EQ((*parts)[1].body, "");
  EXPECT_EQ((*parts)[2].body, "");
  // Empty parts are views into the body too, at the place they occupy.
  for (const MultipartPart& p : *parts) {
    EXPECT_GE(p.body.data(), body.data());
    EXPECT_LE(p.body.data() + p.body.size(), body.data() + body.size());
  }
}

TEST(MultipartTest, ContentTypes) {
  EXPECT_TRUE(IsMultipartContentType("multipart/form-data; boundary=x"));
  EXPECT_TRUE(IsMultipartContentType(" MULTIPART/MIXED ;boundary=x"));
  EXPECT_FALSE(IsMultipartContentType("application/json"));
  EXPECT_FALSE(IsMultipartContentType("multipart/form-data-ish"));
  EXPECT_EQ(*MultipartBoundary("multipart/form-data;boundary=abc"), "abc");
  // Each refused Content-Type and what its message says.
  const std::pair<std::string, std::string> kRefused[] = {
      {"multipart/form-data", "no boundary parameter"},
      {"multipart/form-data; boundary=", "1 to 70 characters"},
      {"multipart/form-data; boundary=" + std::string(71, 'x'), "1 to 70 characters; it has 71"},
      {"multipart/form-data; boundary=\"a<b\"", "the character '<'"},
      {"multipart/form-data; boundary=\"ab", "not closed"},
      {"text/plain", "not multipart"},
  };
  for (const auto& [content_type, fragment] : kRefused) {
    EXPECT_NE(MultipartBoundary(content_type).status().message().find(fragment), std::string::npos)
        << content_type;
  }
}

TEST(MultipartTest, BrokenBodiesNameTheProblem) {
  const std::string close = kDash + "--\r\n";
  // No delimiter at all: the wrong boundary, or not multipart.
  EXPECT_NE(Error("{\"traceEvents\": []}").find("no line '--"), std::string::npos);
  // A truncated upload: the body stops inside the first part's content.
  const std::string part = FilePart("a.json", std::string(100, 'x'));
  EXPECT_NE(Error(part.substr(0, part.size() - 50)).find("ends inside part 1 without the closing"),
            std::string::npos);
  // ... inside the second part's headers.
  EXPECT_NE(Error(FilePart("a.json", "{}") + kDash + "\r\nContent-Disp")
                .find("ends inside the headers of part 2"),
            std::string::npos);
  // ... right after a delimiter.
  EXPECT_NE(Error(FilePart("a.json", "{}") + kDash).find("ends after the delimiter of part 2"),
            std::string::npos);
  // A header line without a colon; a bad Content-Disposition; a delimiter line with junk.
  EXPECT_NE(Error(kDash + "\r\nnot a header\r\n\r\nx\r\n" + close)
                .find("part 1: header line 'not a header' is not 'Name: value'"),
            std::string::npos);
  EXPECT_NE(Error(kDash + "\r\nContent-Disposition: form-data; name\r\n\r\nx\r\n" + close)
                .find("part 1: Content-Disposition: parameter 'name' has no '='"),
            std::string::npos);
  EXPECT_NE(Error(kDash + "\r\nContent-Disposition: form-data; filename=\"a\r\n\r\nx\r\n" + close)
                .find("not closed"),
            std::string::npos);
  EXPECT_NE(Error(kDash + "xyz\r\n\r\nx\r\n" + close).find("followed by 'xyz"), std::string::npos);
  EXPECT_NE(Error(kDash + "\r\nContent-Transfer-Encoding: base64\r\n\r\neA==\r\n" + close)
                .find("base64' is not supported"),
            std::string::npos);
  // Headers that never end, and the closing delimiter before any part.
  EXPECT_NE(Error(kDash + "\r\nX: " + std::string(9000, 'a') + "\r\n\r\n" + close)
                .find("do not end (with an empty line) within 8192 bytes"),
            std::string::npos);
  EXPECT_NE(Error(close).find("before any part"), std::string::npos);
}

TEST(MultipartTest, PartsAndNamesAreBounded) {
  MultipartLimits limits;
  limits.max_parts = 3;
  std::string body;
  for (const char* name : {"r0.json", "r1.json", "r2.json", "r3.json"})
    body += FilePart(name, "{}");
  body += kDash + "--";
  auto r = ParseMultipart(body, kType, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than 3 parts"), std::string::npos);
  const std::string long_name = FilePart(std::string(256, 'n'), "{}") + kDash + "--";
  EXPECT_NE(Error(long_name).find("filename is longer than 255 bytes"), std::string::npos);
}

TEST(MultipartTest, WriterRoundTrips) {
  // Contents that hold the writer's first choice of boundary make it pick another.
  const std::string clash = "x\r\n--infralens-part-boundary-00000000\r\ny";
  std::vector<MultipartFile> files = {{"trace", "rank0.json", "application/json", "{\"a\": 1}"},
                                      {"trace", "we\"ird.json", "", clash},
                                      {"trace", "empty.json", "application/json", ""}};
  std::string type;
  const std::string body = WriteMultipart(files, &type);
  EXPECT_EQ(type, "multipart/form-data; boundary=infralens-part-boundary-00000001");
  auto parts = ParseMultipart(body, type);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 3u);
  for (size_t k = 0; k < files.size(); ++k) {
    EXPECT_EQ((*parts)[k].name, files[k].name);
    EXPECT_EQ((*parts)[k].filename, files[k].filename);
    EXPECT_EQ((*parts)[k].content_type, files[k].content_type);
    EXPECT_EQ((*parts)[k].body, files[k].content);
  }
}

}  // namespace
}  // namespace infralens::server
