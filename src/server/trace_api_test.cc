// The measurement endpoints: in-process (POST /api/trace/analyze, GET /api/trace/synth) against
// closed forms worked out by hand and against `infralens trace analyze --json`, every error an
// upload can meet; and over a real loopback socket, what only the HTTP layer does (the raw
// multipart body reaching our parser, 413 before the body is read, the upload slots).
#include "server/trace_api.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "golden_test_util.h"
#include "http_client.h"
#include "server/api_test_util.h"
#include "server/http_server.h"
#include "server/multipart.h"

namespace infralens::server {
namespace {

using nlohmann::json;

using testing::ExpectError;
using testing::Get;
using testing::MakeApi;
using testing::Post;

// The generated example: one file per rank, as the synth endpoint sends them.
struct TraceSet {
  std::string body, content_type;
  std::vector<std::pair<std::string, std::string>> files;  // name, content
};

TraceSet Synth(const Api& api, const std::string& query) {
  TraceSet t;
  HttpResponse r = Get(api, "/api/trace/synth?" + query);
  EXPECT_EQ(r.status, 200) << r.body;
  t.body = r.body;
  t.content_type = r.content_type;
  auto parts = ParseMultipart(t.body, t.content_type);
  EXPECT_TRUE(parts.ok()) << parts.status().message();
  if (parts.ok()) {
    for (const MultipartPart& p : *parts) t.files.emplace_back(p.filename, std::string(p.body));
  }
  return t;
}

// A multipart/form-data body written by hand, as curl -F writes it.
const std::string kBoundary = "------------------------7a2f31c5e0d94b18";
std::string FormBody(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string body;
  for (const auto& [name, content] : files) {
    body += "--" + kBoundary + "\r\nContent-Disposition: form-data; name=\"trace\"; filename=\"" +
            name + "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + content + "\r\n";
  }
  return body + "--" + kBoundary + "--\r\n";
}
const std::string kFormType = "multipart/form-data; boundary=" + kBoundary;

constexpr char kOneF1B[] = "schedule=1f1b&pp=4&microbatches=8&f=1&b=1";

TEST(TraceApiTest, GeneratedOneF1BGivesTheClosedFormBubble) {
  Api api = MakeApi();
  TraceSet set = Synth(api, kOneF1B);
  EXPECT_EQ(set.content_type.rfind("multipart/form-data; boundary=", 0), 0u);
  ASSERT_EQ(set.files.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(set.files[r].first, "rank" + std::to_string(r) + ".json");

  // The synth answer is the analyze request as it stands.
  HttpResponse res = Post(api, "/api/trace/analyze", set.body, set.content_type);
  ASSERT_EQ(res.status, 200) << res.body.substr(0, 500);
  EXPECT_EQ(res.content_type, "application/json");
  json j = json::parse(res.body);
  // 1F1B with F = B = 1 ms: makespan (m + P - 1)(F + B) = 22 ms; every rank idles (P - 1)(F + B)
  // = 6 ms of it, so the bubble is (P - 1)/(m + P - 1) = 3/11 overall and on each rank.
  const json& p = j["pipeline"];
  EXPECT_NEAR(p["bubble_fraction"].get<double>(), 3.0 / 11.0, 1e-9);
  EXPECT_NEAR(p["step_time_us"].get<double>(), 22000.0, 1e-6);
  ASSERT_EQ(j["ranks"].size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(j["ranks"][r]["rank"], r);
    EXPECT_EQ(j["ranks"][r]["file"], "rank" + std::to_string(r) + ".json");
    EXPECT_NEAR(j["ranks"][r]["bubble_pct"].get<double>(), 100.0 * 3 / 11, 1e-7);
    // Three steps profiled; the last is dropped, as HTA does.
    EXPECT_EQ(j["ranks"][r]["steps"], 3);
    EXPECT_EQ(j["ranks"][r]["steps_analyzed"], 2);
  }
  // The schedule recovered from the PP: annotations: rank r runs min(P - r, m) forwards before
  // its first backward, then alternates; the last rank alternates from the start.
  ASSERT_TRUE(p["recovered"].get<bool>());
  EXPECT_EQ(p["pp"], 4);
  EXPECT_EQ(p["microbatches"], 8);
  EXPECT_NE(std::find(p["matches"].begin(), p["matches"].end(), "1f1b"), p["matches"].end());
  const json& rank0 = p["ranks"][0]["actions"];
  EXPECT_EQ(rank0[3], "0F3");
  EXPECT_EQ(rank0[4], "0B0");
  const json& rank3 = p["ranks"][3]["actions"];
  ASSERT_EQ(rank3.size(), 16u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(rank3[2 * i], "3F" + std::to_string(i));
    EXPECT_EQ(rank3[2 * i + 1], "3B" + std::to_string(i));
  }
  EXPECT_TRUE(j["errors"].empty());
}

TEST(TraceApiTest, SameJsonAsTheCli) {
  Api api = MakeApi();
  TraceSet set = Synth(api, "schedule=zbv&pp=4&microbatches=8&p2p=0.05");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("infralens_trace_api_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const auto& [name, content] : set.files) std::ofstream(dir / name) << content;
  for (const std::string query : {"", "?hta_compat=1&include_last_step=1"}) {
    std::vector<std::string> args = {"trace", "analyze", dir.string(), "--json"};
    if (!query.empty()) {
      args.push_back("--hta-compat");
      args.push_back("--include-last-step");
    }
    auto cli = ::infralens::testing::RunCliCapture(args);
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    json want = json::parse(cli.out);
    for (json& r : want["ranks"])
      r["file"] = std::filesystem::path(r["file"].get<std::string>()).filename().string();
    HttpResponse res = Post(api, "/api/trace/analyze" + query, set.body, set.content_type);
    ASSERT_EQ(res.status, 200);
    json got = json::parse(res.body);
    got.erase("timeline");  // the trace view's, the API's only (TimelineOfAGenerated1F1B)
    EXPECT_EQ(got, want) << query;
  }
  std::filesystem::remove_all(dir);
}

// The trace view's timeline of a generated 1F1B, P = 4, m = 8, F = 1 ms, B = 2 ms, p2p 0.25 ms.
// Rank r's first forward needs the first microbatch through ranks 0..r-1: each computes F and
// sends for p2p, so it starts at r (F + p2p) = 1250r us after the window opens; until then rank r
// sits in the receive it posted at 0, so its first gap is p2p wait [0, 1250r). The kernels
// launched inside each PP:F / PP:B annotation take F and B; each send lasts p2p.
TEST(TraceApiTest, TimelineOfAGenerated1F1B) {
  Api api = MakeApi();
  TraceSet set = Synth(api, "schedule=1f1b&pp=4&microbatches=8&f=1&b=2&p2p=0.25");
  HttpResponse res = Post(api, "/api/trace/analyze", set.body, set.content_type);
  ASSERT_EQ(res.status, 200) << res.body.substr(0, 500);
  json j = json::parse(res.body);
  const json& t = j["timeline"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["max_intervals"], 20000);
  EXPECT_FALSE(t["merged"].get<bool>());
  EXPECT_LE(t["intervals"].get<int>(), 20000);
  ASSERT_EQ(t["windows"].size(), 2u);  // 3 steps, the last dropped
  EXPECT_EQ(t["windows"][0]["begin_us"], 0);
  EXPECT_EQ(t["windows"][0]["step"], 0);
  EXPECT_EQ(t["windows"][1]["step"], 1);
  ASSERT_EQ(t["ranks"].size(), 4u);
  int64_t intervals = 0;
  for (int r = 0; r < 4; ++r) {
    const json& rt = t["ranks"][r];
    EXPECT_EQ(rt["rank"], r);
    intervals += rt["kernels"].size() + rt["gaps"].size();
    // Per step: 8 F and 8 B compute kernels on every rank.
    int compute = 0;
    for (const json& k : rt["kernels"]) compute += k[2] == 0 ? 1 : 0;
    EXPECT_EQ(compute, 2 * 16);
    // The gaps sum to the analysis' bubble, and the first one is where the closed form says.
    double sum = 0;
    const json* first = nullptr;
    for (const json& g : rt["gaps"]) {
      sum += g[3].get<double>();
      if (first == nullptr || g[0].get<double>() < (*first)[0].get<double>()) first = &g;
    }
    EXPECT_NEAR(sum, j["ranks"][r]["bubble_us"].get<double>(), 0.01) << r;
    ASSERT_NE(first, nullptr);
    if (r == 0) {
      EXPECT_GT((*first)[0].get<double>(), 0);  // rank 0 computes from the start
    } else {
      EXPECT_EQ((*first)[0], 0);
      EXPECT_NEAR((*first)[1].get<double>(), 1250.0 * r, 1e-6) << r;
      EXPECT_EQ((*first)[2], 1);  // inside the posted receive: p2p wait
    }
  }
  EXPECT_EQ(t["intervals"].get<int64_t>(), intervals);
  EXPECT_NEAR(t["action_us"]["f"].get<double>(), 1000, 1e-6);
  EXPECT_NEAR(t["action_us"]["b"].get<double>(), 2000, 1e-6);
  EXPECT_TRUE(t["action_us"]["i"].is_null());
  EXPECT_EQ(t["action_counts"]["f"], 4 * 8 * 2);
  EXPECT_NEAR(t["p2p_send_us"].get<double>(), 250, 1e-6);
  // The top kernel: the backward, 2 ms x 8 microbatches x 4 ranks x 2 steps.
  ASSERT_FALSE(t["top_kernels"].empty());
  EXPECT_EQ(t["top_kernels"][0]["class"], "computation");
  EXPECT_NEAR(t["top_kernels"][0]["total_us"].get<double>(), 2000.0 * 8 * 4 * 2, 1e-6);
  EXPECT_EQ(t["top_kernels"][0]["count"], 8 * 4 * 2);
  // Each kernel names its stream; each rank's CPU lanes hold the step and PP: annotations that
  // reach into the span (the CPU runs ahead of the GPU windows, so not exactly 2 m per analysed
  // step: at least one step's 2 m, at most the 3 steps'), clipped to it; the flows pair each send
  // with its recv: 2 m per neighbour pair per analysed step, 2 x 8 x 3 x 2 = 96.
  const double span = t["span_us"].get<double>();
  for (const json& rt : t["ranks"]) {
    for (const json& k : rt["kernels"]) ASSERT_GE(k[6].get<int64_t>(), 0);
    int64_t pp = 0;
    for (const json& c : rt["cpu"]) {
      const std::string name = t["names"][c[3].get<size_t>()];
      EXPECT_TRUE(name.starts_with("PP:") || name.starts_with("ProfilerStep#")) << name;
      EXPECT_TRUE(0 <= c[0].get<double>() && c[0] <= c[1] && c[1].get<double>() <= span) << c;
      pp += name.starts_with("PP:") ? 1 : 0;
    }
    EXPECT_GE(pp, 2 * 8);
    EXPECT_LE(pp, 2 * 8 * 3);
  }
  ASSERT_EQ(t["flows"].size(), 96u);
  for (const json& f : t["flows"]) {
    EXPECT_EQ(std::abs(f[0].get<int>() - f[4].get<int>()), 1);  // neighbouring stages
    EXPECT_LE(f[2].get<double>(), f[7].get<double>());          // sent before received
  }
  EXPECT_EQ(t["flows_dropped"], 0);
}

// 12,000 kernels of 1 us, 1 us apart: 12,000 kernels and 11,999 gaps are more than the 20,000
// intervals an answer holds, so short neighbours are merged, and the answer says at what
// resolution; the merged gaps still hold the 11,999 us of idle.
TEST(TraceApiTest, TimelineIsBounded) {
  Api api = MakeApi();
  std::string body = R"J({"schemaVersion": 1, "traceEvents": [)J";
  for (int i = 0; i < 12000; ++i) {
    body += fmt::format(
        R"J({}{{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {}, "dur": 1, "args": {{"stream": 7}}}})J",
        i ? ",\n" : "", i % 7, 2 * i);
  }
  body += "]}";
  HttpResponse res = Post(api, "/api/trace/analyze", body, "application/json");
  ASSERT_EQ(res.status, 200) << res.body.substr(0, 500);
  json j = json::parse(res.body);
  const json& t = j["timeline"];
  EXPECT_TRUE(t["merged"].get<bool>());
  EXPECT_GT(t["resolution_us"].get<double>(), 0);
  EXPECT_LE(t["intervals"].get<int>(), 20000);
  const json& rt = t["ranks"][0];
  EXPECT_LE(rt["kernels"].size() + rt["gaps"].size(), 20000u);
  int64_t kernels = 0;
  double idle = 0;
  for (const json& k : rt["kernels"]) kernels += k[4].get<int64_t>();
  for (const json& g : rt["gaps"]) idle += g[3].get<double>();
  EXPECT_EQ(kernels, 12000);
  EXPECT_NEAR(idle, 11999, 1e-6);
  EXPECT_EQ(t["names"].size(), 7u);
}

TEST(TraceApiTest, OptionsChangeTheAnalysis) {
  Api api = MakeApi();
  TraceSet set = Synth(api, kOneF1B);
  json plain = json::parse(Post(api, "/api/trace/analyze", set.body, set.content_type).body);
  EXPECT_EQ(plain["mode"], "native");
  EXPECT_EQ(plain["pipeline"]["windows"], 2);
  json all = json::parse(
      Post(api, "/api/trace/analyze?hta_compat=1&include_last_step=1", set.body, set.content_type)
          .body);
  EXPECT_EQ(all["mode"], "hta-compat");
  EXPECT_EQ(all["include_last_step"], true);
  EXPECT_EQ(all["pipeline"]["windows"], 3);
  EXPECT_EQ(all["ranks"][0]["steps_analyzed"], 3);
  // The CLI's spelling works too; an unknown option is refused like a mistyped flag.
  EXPECT_EQ(Post(api, "/api/trace/analyze?hta-compat=1", set.body, set.content_type).status, 200);
  ExpectError(Post(api, "/api/trace/analyze?hta=1", set.body, set.content_type), 400, "hta", "hta");
}

TEST(TraceApiTest, ABadFileIsReportedAndTheOthersKept) {
  Api api = MakeApi();
  TraceSet set = Synth(api, kOneF1B);
  auto files = set.files;
  files[1].second = files[1].second.substr(0, files[1].second.size() / 2);  // cut off mid-way
  files[2].second = *Gzip(files[2].second);                                 // gzip is read too
  files[2].first = "rank2.json.gz";
  HttpResponse res = Post(api, "/api/trace/analyze", FormBody(files), kFormType);
  ASSERT_EQ(res.status, 200) << res.body.substr(0, 500);
  json j = json::parse(res.body);
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_EQ(j["errors"][0]["file"], "rank1.json");
  EXPECT_NE(j["errors"][0]["message"].get<std::string>().find("rank1.json: truncated"),
            std::string::npos)
      << j["errors"];
  ASSERT_EQ(j["ranks"].size(), 3u);
  EXPECT_EQ(j["ranks"][0]["rank"], 0);
  EXPECT_EQ(j["ranks"][1]["rank"], 2);
  EXPECT_EQ(j["ranks"][1]["file"], "rank2.json.gz");
  EXPECT_EQ(j["ranks"][2]["rank"], 3);
  // The other ranks' own numbers do not depend on rank 1: still 3/11 of each one's window.
  for (const json& r : j["ranks"]) EXPECT_NEAR(r["bubble_pct"].get<double>(), 100.0 * 3 / 11, 1e-7);

  // When no file can be used: 400 with every file's error.
  HttpResponse none =
      Post(api, "/api/trace/analyze",
           FormBody({{"a.json", "{\"traceEvents\": ["}, {"b.json", "nope"}}), kFormType);
  ExpectError(none, 400, "body", "none of the 2 files could be used");
  json e = json::parse(none.body);
  ASSERT_EQ(e["errors"].size(), 2u);
  EXPECT_EQ(e["errors"][0]["file"], "a.json");
  EXPECT_EQ(e["errors"][1]["file"], "b.json");
}

TEST(TraceApiTest, OneFileAsTheWholeBody) {
  Api api = MakeApi();
  TraceSet set = Synth(api, kOneF1B);
  HttpResponse res = Post(api, "/api/trace/analyze", set.files[3].second, "application/json");
  ASSERT_EQ(res.status, 200) << res.body.substr(0, 300);
  json j = json::parse(res.body);
  ASSERT_EQ(j["ranks"].size(), 1u);
  EXPECT_EQ(j["ranks"][0]["rank"], 3);  // from distributedInfo
  EXPECT_EQ(j["ranks"][0]["file"], "request body");
}

TEST(TraceApiTest, OversizedBodyIs413) {
  ServerLimits limits;
  Api api = MakeApi(limits);
  // The upload limit is its own: far above the 4 MiB of the other endpoints, and exact.
  EXPECT_EQ(api.MaxBodyBytes("/api/trace/analyze"), size_t{256} << 20);
  EXPECT_EQ(api.MaxBodyBytes("/api/import"), size_t{4} << 20);
  std::string big((size_t{256} << 20) + 1, 'x');
  HttpResponse r = Post(api, "/api/trace/analyze", std::move(big), kFormType);
  ExpectError(r, 413, "", "exceeds the limit of 268435456 bytes");
  // 4 MiB + 1 goes to the upload endpoint (and fails only as a trace), not to the others.
  const std::string mid((size_t{4} << 20) + 1, 'x');
  EXPECT_EQ(Post(api, "/api/trace/analyze", mid, "application/json").status, 400);
  EXPECT_EQ(Post(api, "/api/import", mid, "text/csv").status, 413);
  json index = json::parse(Get(api, "/api").body);
  EXPECT_EQ(index["limits"]["max_upload_bytes"], int64_t{256} << 20);
  bool listed = false;
  for (const json& e : index["endpoints"]) {
    if (e["path"] == "/api/trace/analyze") {
      listed = true;
      EXPECT_EQ(e["body"], "files (multipart/form-data)");
    }
  }
  EXPECT_TRUE(listed);
}

TEST(TraceApiTest, MalformedUploadsAre400NamingTheProblem) {
  Api api = MakeApi();
  const std::string path = "/api/trace/analyze";
  ExpectError(Post(api, path, "", kFormType), 400, "body", "the request body is empty");
  ExpectError(Post(api, path, "x", "multipart/form-data"), 400, "body",
              "Content-Type multipart/form-data has no boundary parameter");
  ExpectError(Post(api, path, "{\"traceEvents\": []}", kFormType), 400, "body",
              "multipart body: no line '--" + kBoundary + "'");
  std::string cut = FormBody({{"rank0.json", std::string(500, ' ')}});
  cut.resize(cut.size() - 100);
  ExpectError(Post(api, path, cut, kFormType), 400, "body",
              "the body ends inside part 1 without the closing delimiter");
  ExpectError(Post(api, path,
                   "--" + kBoundary + "\r\nContent-Disposition form-data\r\n\r\n{}\r\n--" +
                       kBoundary + "--",
                   kFormType),
              400, "body", "part 1: header line 'Content-Disposition form-data' is not");
  // A form field among the files: options go in the query string.
  ExpectError(Post(api, path,
                   "--" + kBoundary + "\r\nContent-Disposition: form-data; name=\"hta_compat\"" +
                       "\r\n\r\n1\r\n--" + kBoundary + "--",
                   kFormType),
              400, "body", "part 1 (name \"hta_compat\") is not a file");
  ExpectError(Get(api, path), 405, "", "/api/trace/analyze answers POST");
}

TEST(TraceApiTest, TimeLimitIs503) {
  ServerLimits limits;
  limits.upload_time_limit = std::chrono::milliseconds(0);
  Api api = MakeApi(limits);
  TraceSet set = Synth(api, kOneF1B);
  ExpectError(Post(api, "/api/trace/analyze", set.body, set.content_type), 503, "",
              "time limit of 0 ms");
}

// The analysis of an upload stops at its call's deadline or when its client has gone (issue 26):
// AnalyzeUploaded asks the call at the analysis' cancellation points (trace/analysis.h,
// AnalysisOptions::stop; AnalysisTest.StopEndsTheAnalysisAtItsFirstTrue shows that any of them
// stops it) and answers the call's 503, not the analysis.
TEST(TraceApiTest, AnalysisStopsWhenItsCallIsCancelled) {
  Api api = MakeApi();
  TraceSet set = Synth(api, kOneF1B);
  std::vector<trace::TraceBytes> inputs;
  for (const auto& [name, content] : set.files) inputs.push_back({name, content});
  const trace::LoadedTraces loaded = trace::LoadTraceBytes(inputs);
  ASSERT_EQ(loaded.traces.size(), set.files.size());
  ServerLimits limits;
  ParamReader params({}, {});
  CancelToken client;
  ApiCall call(params, "", limits, std::chrono::steady_clock::time_point::max(), "",
               std::chrono::milliseconds(30'000), &client);
  trace::KernelTimeline timeline;
  auto done = AnalyzeUploaded(call, loaded, {}, &timeline);
  ASSERT_TRUE(std::holds_alternative<trace::TraceAnalysis>(done));
  EXPECT_EQ(std::get<trace::TraceAnalysis>(done).ranks.size(), set.files.size());
  client.Cancel();  // the client has gone
  auto stopped = AnalyzeUploaded(call, loaded, {}, &timeline);
  ASSERT_TRUE(std::holds_alternative<ApiError>(stopped));
  EXPECT_EQ(std::get<ApiError>(stopped).status, 503);
  EXPECT_NE(std::get<ApiError>(stopped).message.find("time limit of 30000 ms"), std::string::npos)
      << std::get<ApiError>(stopped).message;
  // A deadline already past stops it the same way.
  CancelToken never;
  ApiCall late(params, "", limits, std::chrono::steady_clock::now(), "",
               std::chrono::milliseconds(1), &never);
  auto late_result = AnalyzeUploaded(late, loaded, {}, &timeline);
  ASSERT_TRUE(std::holds_alternative<ApiError>(late_result));
  EXPECT_EQ(std::get<ApiError>(late_result).status, 503);
}

// Kept events beyond the upload's memory budget: the file is refused as too large (400, naming
// the budget and the CLI), never a 503 to retry nor an allocation failure. The budget here is
// one byte short of the example's kernels and launches.
TEST(TraceApiTest, UploadBeyondItsMemoryBudgetIs400) {
  EXPECT_LT(ServerLimits().upload_analysis_bytes, trace::kDefaultTraceMemoryBudgetBytes);
  Api api = MakeApi();
  TraceSet set = Synth(api, "schedule=gpipe&pp=1&microbatches=2&f=1&b=1&steps=1");
  ASSERT_EQ(set.files.size(), 1u);
  const trace::LoadedTraces all = trace::LoadTraceBytes({{"r0", set.files[0].second}});
  ASSERT_EQ(all.traces.size(), 1u);
  const trace::RankTrace& t = all.traces[0];
  ASSERT_GT(t.gpu.size(), 0u);
  ServerLimits limits;
  limits.upload_analysis_bytes = t.gpu.size() * trace::kAnalysisBytesPerGpuEvent +
                                 t.launches.size() * trace::kAnalysisBytesPerLaunch - 1;
  Api tight = MakeApi(limits);
  HttpResponse r = Post(tight, "/api/trace/analyze", set.body, set.content_type);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("too large to analyse"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("the CLI's budget is 860 MiB: infralens trace analyze"), std::string::npos)
      << r.body;
}

TEST(TraceApiTest, SynthOptionsAndErrors) {
  Api api = MakeApi();
  HttpResponse r = Get(api, "/api/trace/synth?schedule=gpipe&pp=2&m=3&f=1&b=2&steps=1&format=json");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  ASSERT_EQ(j["files"].size(), 2u);
  EXPECT_EQ(j["files"][1]["name"], "rank1.json");
  // GPipe: makespan (m + P - 1)(F + B) = 12 ms, bubble (P - 1)/(m + P - 1) = 1/4.
  EXPECT_DOUBLE_EQ(j["makespan_ms"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(j["bubble_fraction"].get<double>(), 0.25);
  ExpectError(Get(api, "/api/trace/synth?schedule=2f2b"), 400, "schedule", "unknown schedule");
  ExpectError(Get(api, "/api/trace/synth?pp=64&m=512"), 400, "microbatches",
              "the server generates at most 30000");
  ExpectError(Get(api, "/api/trace/synth?steps=11"), 400, "steps", "steps");
  ExpectError(Get(api, "/api/trace/synth?schedule=1f1b&pp=8&m=4"), 400, "microbatches",
              "at least as many microbatches");
}

// --- Over a real socket ------------------------------------------------------------------------

class TraceHttpTest : public ::testing::Test {
 protected:
  void Start(int max_uploads) {
    ServeOptions opt;
    opt.port = 0;
    opt.threads = 4;
    opt.limits.max_concurrent_uploads = max_uploads;
    server_ = std::make_unique<HttpServer>(opt);
    ASSERT_TRUE(server_->Bind().ok());
    thread_ = std::thread([this] { (void)server_->Run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string Host() const { return "Host: 127.0.0.1:" + std::to_string(server_->port()) + "\r\n"; }
  // "METHOD /path" with this server's Host header and `rest` (the other headers, the blank line
  // and a body if any), sent as it is on a new connection, and the answer.
  ::infralens::testing::RawResponse ExchangeOnNewConnection(const std::string& method_path,
                                                            const std::string& rest) const {
    ::infralens::testing::HttpClient c(server_->port());
    ::infralens::testing::RawResponse r;
    std::string err;
    EXPECT_TRUE(c.Exchange(method_path + " HTTP/1.1\r\n" + Host() + rest, &r, &err)) << err;
    return r;
  }

  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

// A connected loopback socket to write a request in pieces.
int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}
void SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
  }
}
std::string ReadStatusLine(int fd) {
  std::string got;
  char buf[4096];
  while (got.find("\r\n") == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got.substr(0, got.find("\r\n"));
}

TEST_F(TraceHttpTest, MultipartFormDataReachesTheParserAndLimitsHold) {
  Start(2);
  Api api = MakeApi();
  TraceSet set = Synth(api, kOneF1B);
  ::infralens::testing::HttpClient c(server_->port());
  ::infralens::testing::RawResponse r;
  std::string err;
  // httplib would split multipart/form-data itself; the upload route hands the raw body to ours.
  ASSERT_TRUE(c.Request("POST", "/api/trace/analyze?include_last_step=1", set.body,
                        {{"Content-Type", set.content_type}}, &r, &err))
      << err;
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  json j = json::parse(r.body);
  EXPECT_EQ(j["ranks"].size(), 4u);
  EXPECT_NEAR(j["pipeline"]["bubble_fraction"].get<double>(), 3.0 / 11.0, 1e-9);
  // The generated set over HTTP is the same bytes.
  ASSERT_TRUE(c.Request("GET", std::string("/api/trace/synth?") + kOneF1B, "", {}, &r, &err));
  EXPECT_EQ(r.body, set.body);
  // A malformed body is the parser's 400 over the wire too.
  ASSERT_TRUE(
      c.Request("POST", "/api/trace/analyze", "junk", {{"Content-Type", kFormType}}, &r, &err));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("multipart body: no line"), std::string::npos) << r.body;

  // 413 as soon as the headers announce more than 256 MiB, without sending the body; 4 MiB + 1
  // for the other endpoints; a chunked body to them is refused (411) rather than read.
  r = ExchangeOnNewConnection(
      "POST /api/trace/analyze",
      "Content-Type: " + kFormType + "\r\nContent-Length: 268435457\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("exceeds the limit of 268435456 bytes"), std::string::npos) << r.body;
  EXPECT_EQ(r.headers["connection"], "close");
  r = ExchangeOnNewConnection("POST /api/import", "Content-Length: 4194305\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  // Another site's page may not make the server read an upload: 403 from the headers alone.
  r = ExchangeOnNewConnection("POST /api/trace/analyze",
                              "Origin: http://evil.example\r\nContent-Type: " + kFormType +
                                  "\r\nContent-Length: 1000000\r\n\r\n");
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("cross-origin request refused"), std::string::npos) << r.body;
  EXPECT_EQ(r.headers["x-frame-options"], "DENY");
  r = ExchangeOnNewConnection("POST /api/import",
                              "Transfer-Encoding: chunked\r\n\r\n3\r\n0F0\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 411);
}

TEST_F(TraceHttpTest, UploadsBeyondTheSlotsGet503BeforeTheirBodyIsRead) {
  Start(1);
  // A: an upload whose body is still arriving holds the only slot. B: refused while A is being
  // read. The server's workers may take B before A even though A connected first (then A is the
  // one refused), so the pair is retried until A holds the slot when B arrives.
  const std::string first = "{\"traceE", rest = "vents\": [{\"ph\"";
  ::infralens::testing::RawResponse r;
  std::string err;
  bool busy = false;
  int a = -1;
  for (int k = 0; k < 100 && !busy; ++k) {
    a = Connect(server_->port());
    SendAll(a, "POST /api/trace/analyze HTTP/1.1\r\n" + Host() +
                   "Content-Type: application/json\r\nContent-Length: " +
                   std::to_string(first.size() + rest.size()) + "\r\n\r\n" + first);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    r = ExchangeOnNewConnection("POST /api/trace/analyze",
                                "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    busy = r.status == 503;
    if (!busy) {  // A finishes (its 503, or a 400 once the rest arrives) and frees the slot
      SendAll(a, rest);
      (void)ReadStatusLine(a);
      ::close(a);
    }
  }
  ASSERT_TRUE(busy) << r.status << " " << r.body;
  EXPECT_EQ(r.headers["retry-after"], "2");
  EXPECT_NE(r.body.find("already reading 1 uploads"), std::string::npos) << r.body;
  // A completes (a truncated trace: 400), and the slot is free again.
  SendAll(a, rest);
  EXPECT_EQ(ReadStatusLine(a), "HTTP/1.1 400 Bad Request");
  ::close(a);
  ::infralens::testing::HttpClient c(server_->port());
  ASSERT_TRUE(c.Request("GET", "/api/trace/synth?pp=2&m=2", "", {}, &r, &err));
  ASSERT_EQ(r.status, 200);
  const std::string type = r.headers["content-type"];
  ASSERT_TRUE(c.Request("POST", "/api/trace/analyze", r.body, {{"Content-Type", type}}, &r, &err));
  EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
}

}  // namespace
}  // namespace infralens::server
