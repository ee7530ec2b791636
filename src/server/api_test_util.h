// Helpers for the in-process API tests (api_test.cc, lab_api_test.cc): requests through
// Api::Handle, JSON answers and the shape of an error.
#ifndef INFRALENS_SERVER_API_TEST_UTIL_H_
#define INFRALENS_SERVER_API_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api.h"

namespace infralens::server::testing {

inline Api MakeApi(ServerLimits limits = {}) {
  Api api(limits, AccessPolicy{});
  RegisterAllEndpoints(api);
  return api;
}

// Searches that must finish: a time limit far above the default, so that they complete under the
// sanitizers too (the time limit itself is tested with tiny ones).
inline Api PatientApi() {
  ServerLimits limits;
  limits.time_limit = std::chrono::milliseconds(300'000);
  return MakeApi(limits);
}

// A 200 JSON answer, parsed.
inline nlohmann::json Ok(const HttpResponse& r) {
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  return nlohmann::json::parse(r.body);
}

inline HttpResponse Get(const Api& api, const std::string& target) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  r.host = "127.0.0.1:8080";
  return api.Handle(r);
}

inline HttpResponse Post(const Api& api, const std::string& target, const std::string& body,
                         const std::string& content_type = "text/csv",
                         const std::string& origin = "") {
  HttpRequest r;
  r.method = "POST";
  r.target = target;
  r.body = body;
  r.content_type = content_type;
  r.host = "127.0.0.1:8080";
  r.origin = origin;
  return api.Handle(r);
}

inline std::string Header(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

inline nlohmann::json Json(const HttpResponse& r) { return nlohmann::json::parse(r.body); }

// A 400-class error names what is wrong and, for bad input, the parameter ("" = none named).
inline void ExpectError(const HttpResponse& r, int status, const std::string& parameter,
                        const std::string& fragment) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  nlohmann::json j = nlohmann::json::parse(r.body);
  ASSERT_TRUE(j.contains("error")) << r.body;
  EXPECT_NE(j["error"].get<std::string>().find(fragment), std::string::npos) << r.body;
  if (parameter.empty()) {
    EXPECT_FALSE(j.contains("parameter")) << r.body;
  } else {
    EXPECT_EQ(j.value("parameter", ""), parameter) << r.body;
  }
}

}  // namespace infralens::server::testing

#endif  // INFRALENS_SERVER_API_TEST_UTIL_H_
