// A small streaming JSON writer for output. Numbers use the shortest form that round-trips, so
// machine readers get exact values. (Parsing JSON input uses nlohmann or simdjson in src/io.)
#ifndef INFRALENS_BASE_JSON_WRITER_H_
#define INFRALENS_BASE_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace infralens {

class JsonWriter {
 public:
  // indent = 0 writes compact JSON on one line; otherwise pretty-prints with that many spaces.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Number(double value);  // non-finite values are written as null
  JsonWriter& Int(int64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // Key + value shorthands.
  JsonWriter& Field(std::string_view key, std::string_view value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, const char* value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, double value) { return Key(key).Number(value); }
  JsonWriter& Field(std::string_view key, int value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, int64_t value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, bool value) { return Key(key).Bool(value); }
  // An array of strings (of whole numbers).
  JsonWriter& Field(std::string_view key, const std::vector<std::string>& values);
  JsonWriter& Field(std::string_view key, const std::vector<int64_t>& values);

  // The document so far, with a trailing newline once the top-level value is closed.
  std::string str() const { return depth_.empty() ? out_ + "\n" : out_; }

  static std::string Escape(std::string_view s);

 private:
  void BeforeValue();
  void Newline();
  JsonWriter& Open(char bracket, bool is_object);
  JsonWriter& Close(char bracket);

  int indent_;
  std::string out_;
  struct Level {
    bool is_object;
    bool empty;
  };
  std::vector<Level> depth_;
  bool after_key_ = false;
};

}  // namespace infralens

#endif  // INFRALENS_BASE_JSON_WRITER_H_
