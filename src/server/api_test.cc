// The web API in-process (no sockets): every endpoint, its JSON against the CLI's and against the
// closed forms, and every error the router produces.
#include "server/api.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "golden_test_util.h"
#include "request/engine_requests.h"
#include "server/api_test_util.h"
#include "server/assets.h"
#include "server/engine_params.h"

namespace infralens::server {
namespace {

using ::infralens::testing::RunCliCapture;
using nlohmann::json;

using testing::ExpectError;
using testing::Get;
using testing::Header;
using testing::Json;
using testing::MakeApi;
using testing::Post;

TEST(ApiTest, ScheduleMatchesClosedFormsAndTheCli) {
  Api api = MakeApi();
  HttpResponse r = Get(api, "/api/schedule?schedule=1f1b&pp=4&microbatches=8&f=1&b=1");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  json j = Json(r);
  // (m + P - 1)(F + B) and (P - 1)/(m + P - 1), docs/schedules.md.
  EXPECT_DOUBLE_EQ(j["makespan"].get<double>(), (8 + 4 - 1) * 2.0);
  EXPECT_DOUBLE_EQ(j["bubble_fraction"].get<double>(), 3.0 / 11.0);
  EXPECT_EQ(j["actions"].size(), 2u * 4 * 8);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(j["ranks"][rank]["peak_activations"].get<int>(), 4 - rank);
  // The same document as `infralens schedule --json` (whitespace aside).
  auto cli = RunCliCapture(
      {"schedule", "--schedule", "1f1b", "--pp", "4", "-m", "8", "--f", "1", "--b", "1", "--json"});
  ASSERT_EQ(cli.exit_code, 0);
  EXPECT_EQ(j, json::parse(cli.out));
  // The CLI's long flag names work as aliases; POST takes the same parameters form-encoded.
  EXPECT_EQ(Json(Get(api, "/api/schedule?schedule=1f1b&stages=4&m=8&f=1&b=1")), j);
  HttpResponse post = Post(api, "/api/schedule", "schedule=1f1b&pp=4&microbatches=8&f=1&b=1",
                           "application/x-www-form-urlencoded; charset=UTF-8");
  ASSERT_EQ(post.status, 200) << post.body;
  EXPECT_EQ(Json(post), j);
}

TEST(ApiTest, DependenciesPointAtTheProducingAction) {
  Api api = MakeApi();
  json j = Json(Get(api, "/api/schedule?schedule=1f1b&pp=4&microbatches=8&dependencies=1"));
  const json& actions = j["actions"];
  int checked = 0;
  for (const json& a : actions) {
    const int stage = a["stage"], mb = a["microbatch"];
    const std::string type = a["type"];
    ASSERT_TRUE(a.contains("deps"));
    if (type == "F" && stage == 0) {
      EXPECT_TRUE(a["deps"].empty());
      continue;
    }
    ASSERT_EQ(a["deps"].size(), 1u);
    const json& d = actions[a["deps"][0].get<size_t>()];
    if (type == "F") {  // F(s, i) after F(s-1, i)
      EXPECT_EQ(d["type"], "F");
      EXPECT_EQ(d["stage"], stage - 1);
    } else if (stage == 3) {  // B on the last stage after its own forward
      EXPECT_EQ(d["type"], "F");
      EXPECT_EQ(d["stage"], 3);
    } else {  // B(s, i) after B(s+1, i)
      EXPECT_EQ(d["type"], "B");
      EXPECT_EQ(d["stage"], stage + 1);
    }
    EXPECT_EQ(d["microbatch"], mb);
    EXPECT_LE(d["end"].get<double>(), a["start"].get<double>());
    ++checked;
  }
  EXPECT_EQ(checked, 2 * 4 * 8 - 8);
  EXPECT_FALSE(j["dependencies_omitted"].get<bool>());
}

// Dependencies come only for what a page draws (20,000 actions); above, the answer says they were
// left out. 1F1B makes one F and one B per stage and microbatch: 2 x 4 x 2500 = 20,000 actions.
TEST(ApiTest, DependenciesOnlyUpToWhatAPageDraws) {
  Api api = MakeApi();
  json at = Json(Get(api, "/api/schedule?schedule=1f1b&pp=4&microbatches=2500&dependencies=1"));
  ASSERT_EQ(at["actions"].size(), 20000u);
  EXPECT_FALSE(at["dependencies_omitted"].get<bool>());
  EXPECT_TRUE(at["actions"][0].contains("deps"));
  json over = Json(Get(api, "/api/schedule?schedule=1f1b&pp=4&microbatches=2501&dependencies=1"));
  ASSERT_EQ(over["actions"].size(), 20008u);
  EXPECT_TRUE(over["dependencies_omitted"].get<bool>());
  for (const json& a : over["actions"]) ASSERT_FALSE(a.contains("deps"));
  // Not asked for: neither the lists nor the flag.
  json plain = Json(Get(api, "/api/schedule?schedule=1f1b&pp=4&microbatches=8"));
  EXPECT_FALSE(plain.contains("dependencies_omitted"));
  EXPECT_FALSE(plain["actions"][0].contains("deps"));
}

// format=columns holds what format=json does, one array per field, for the canvas timeline; it
// may hold 5/2 of max_actions (the JSON per action is smaller).
TEST(ApiTest, ColumnsHoldTheSameActionsAsJson) {
  Api api = MakeApi();
  const std::string q = "/api/schedule?schedule=dualpipev&pp=4&microbatches=8&dependencies=1";
  json j = Json(Get(api, q));
  json c = Json(Get(api, q + "&format=columns"));
  EXPECT_FALSE(c.contains("actions"));
  EXPECT_EQ(c["makespan"], j["makespan"]);
  const json& cols = c["columns"];
  const size_t n = j["actions"].size();
  ASSERT_EQ(cols["start"].size(), n);
  ASSERT_EQ(c["dep_offsets"].size(), n + 1);
  bool saw_fb = false;
  for (size_t k = 0; k < n; ++k) {
    const json& a = j["actions"][k];
    EXPECT_EQ(c["types"][cols["type"][k].get<size_t>()], a["type"]);
    EXPECT_EQ(cols["rank"][k], a["rank"]);
    EXPECT_EQ(cols["stage"][k], a["stage"]);
    EXPECT_EQ(cols["chunk"][k], a["chunk"]);
    EXPECT_EQ(cols["microbatch"][k], a["microbatch"]);
    EXPECT_EQ(cols["start"][k], a["start"]);
    EXPECT_EQ(cols["end"][k], a["end"]);
    if (a["type"] == "FB") {
      saw_fb = true;
      EXPECT_EQ(cols["b_microbatch"][k], a["b_microbatch"]);
    } else {
      EXPECT_EQ(cols["b_stage"][k], -1);
    }
    const size_t d0 = c["dep_offsets"][k], d1 = c["dep_offsets"][k + 1];
    ASSERT_EQ(d1 - d0, a["deps"].size());
    for (size_t i = d0; i < d1; ++i) EXPECT_EQ(c["deps"][i], a["deps"][i - d0]);
  }
  EXPECT_TRUE(saw_fb);
  ServerLimits lim;
  lim.max_actions = 1000;
  Api small = MakeApi(lim);
  // 1F1B makes 2 P m actions (one F and one B per stage and microbatch, no split backward): at
  // P = 8, m = 64, 1024, over 1000 and under 2500; m = 157 makes 2512, over 2500.
  ExpectError(Get(small, "/api/schedule?pp=8&microbatches=64"), 400, "microbatches",
              "at most 1000");
  EXPECT_EQ(Get(small, "/api/schedule?pp=8&microbatches=64&format=columns").status, 200);
  EXPECT_EQ(Get(small, "/api/schedule?pp=8&microbatches=156&format=columns").status, 200);
  ExpectError(Get(small, "/api/schedule?pp=8&microbatches=157&format=columns"), 400, "microbatches",
              "at most 2500");
}

TEST(ApiTest, ScheduleFormatsAndDownloads) {
  Api api = MakeApi();
  HttpResponse csv =
      Get(api, "/api/schedule?schedule=dualpipev&pp=2&microbatches=4&format=csv&download=1");
  ASSERT_EQ(csv.status, 200);
  EXPECT_EQ(csv.content_type, "text/csv; charset=utf-8");
  EXPECT_EQ(Header(csv, "Content-Disposition"), "attachment; filename=\"dualpipev_pp2_m4.csv\"");
  auto cli = RunCliCapture(
      {"schedule", "--schedule", "dualpipev", "--pp", "2", "-m", "4", "--format", "csv"});
  EXPECT_EQ(csv.body, cli.out);
  HttpResponse svg = Get(api, "/api/schedule?format=svg");
  EXPECT_EQ(svg.content_type, "image/svg+xml");
  EXPECT_EQ(svg.body.rfind("<svg", 0), 0u);
  EXPECT_EQ(Header(svg, "Content-Disposition"), "");
  json trace = Json(Get(api, "/api/schedule?format=chrome&pp=2&m=2"));
  EXPECT_EQ(trace["traceEvents"].size(),
            2u * 3 + 2 * 2 * 2);  // 3 metadata events per rank + 8 actions
  HttpResponse ascii = Get(api, "/api/schedule?format=ascii&width=60&pp=4");
  EXPECT_EQ(ascii.content_type, "text/plain; charset=utf-8");
  EXPECT_NE(ascii.body.find("rank 3"), std::string::npos);
}

// /api/schedule is generated from `infralens schedule`'s declaration: its parameters are the
// declared options but the CLI's --load, with format (the CLI's formats and the API's columns)
// and download (the command names its file); each document is the CLI's, with its media type and
// a file named by the schedule.
TEST(ApiTest, ScheduleIsGeneratedFromItsDeclaration) {
  Api api = MakeApi();
  const request::Command& schedule = request::ScheduleCommand();
  std::vector<std::string> declared;
  for (const ParamSpec& p : ParamSpecsOf([&](request::FlagSink& f) { schedule.Declare(f); })) {
    if (p.name != "load") declared.push_back(p.name);
  }
  declared.insert(declared.end(), {"format", "download"});
  std::vector<std::string> served;
  for (const Endpoint& e : api.endpoints()) {
    if (e.path != "/api/schedule") continue;
    for (const ParamSpec& p : e.params) served.push_back(p.name);
  }
  EXPECT_EQ(served, declared);
  EXPECT_NE(std::ranges::find(served, "dependencies"), served.end());
  const std::vector<std::pair<std::string, std::string>> files = {
      {"json", ".json"},         {"columns", ".json"}, {"csv", ".csv"},
      {"chrome", ".trace.json"}, {"svg", ".svg"},      {"ascii", ".txt"}};
  for (const auto& [format, ext] : files) {
    const HttpResponse r =
        Get(api, "/api/schedule?schedule=gpipe&pp=2&m=3&width=60&download=1&format=" + format);
    ASSERT_EQ(r.status, 200) << format << ": " << r.body;
    EXPECT_EQ(Header(r, "Content-Disposition"), "attachment; filename=\"gpipe_pp2_m3" + ext + "\"");
    if (format == "columns") continue;  // the API's alone
    const auto cli = RunCliCapture({"schedule", "--schedule", "gpipe", "--pp", "2", "-m", "3",
                                    "--width", "60", "--format", format});
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    if (format == "json" || format == "chrome") {
      EXPECT_EQ(json::parse(r.body), json::parse(cli.out)) << format;
    } else {
      EXPECT_EQ(r.body, cli.out) << format;
    }
  }
  // The CLI neither lists nor reads what the API alone takes.
  EXPECT_EQ(RunCliCapture({"schedule", "--dependencies"}).exit_code, 2);
  EXPECT_EQ(RunCliCapture({"schedule", "--format", "columns"}).exit_code, 2);
}

TEST(ApiTest, CompareMatchesTheCli) {
  Api api = MakeApi();
  HttpResponse r = Get(api, "/api/compare?pp=4&microbatches=8");
  ASSERT_EQ(r.status, 200) << r.body;
  auto cli = RunCliCapture({"compare", "--pp", "4", "-m", "8", "--json"});
  EXPECT_EQ(Json(r), json::parse(cli.out));
  HttpResponse md = Get(api, "/api/compare?format=markdown");
  EXPECT_EQ(md.body, RunCliCapture({"compare", "--format", "markdown"}).out);
}

TEST(ApiTest, ImportSimulatesWhatScheduleWrites) {
  Api api = MakeApi();
  const std::string csv =
      Get(api, "/api/schedule?schedule=zbv&pp=4&microbatches=8&format=csv").body;
  HttpResponse r = Post(api, "/api/import?f=1&b=2", csv);
  ASSERT_EQ(r.status, 200) << r.body;
  json imported = Json(r),
       generated = Json(Get(api, "/api/schedule?schedule=zbv&pp=4&microbatches=8"));
  EXPECT_EQ(imported["schedule"], "custom");
  EXPECT_EQ(imported["makespan"], generated["makespan"]);
  EXPECT_EQ(imported["bubble_fraction"], generated["bubble_fraction"]);
  EXPECT_EQ(imported["actions"], generated["actions"]);
  HttpResponse svg = Post(api, "/api/import?format=svg&download=1", csv);
  EXPECT_EQ(svg.content_type, "image/svg+xml");
  EXPECT_EQ(Header(svg, "Content-Disposition"), "attachment; filename=\"imported_pp4_m8.svg\"");
}

TEST(ApiTest, ImportErrorsShowWhereTheScheduleBreaks) {
  Api api = MakeApi();
  // Rank 1 runs its backward before its forward: rank 0's 0B0 waits for 1B0 (rank 1's action #0),
  // which waits for 1F0, which rank 1 runs only after it.
  HttpResponse dead = Post(api, "/api/import", "0F0,0B0\n1B0,1F0\n");
  ExpectError(dead, 400, "body", "deadlock");
  json j = Json(dead);
  ASSERT_EQ(j["deadlock"].size(), 2u);
  EXPECT_EQ(j["deadlock"][0]["rank"], 0);
  EXPECT_EQ(j["deadlock"][0]["index"], 1);
  EXPECT_EQ(j["deadlock"][0]["action"], "0B0");
  EXPECT_EQ(
      j["deadlock"][0]["waits_for"],
      json::parse(
          R"({"stage": 1, "type": "B/I", "microbatch": 0, "rank": 1, "index": 0, "action": "1B0"})"));
  EXPECT_EQ(j["deadlock"][1]["waits_for"]["action"], "1F0");
  EXPECT_EQ(j["ranks"], json::parse(R"([["0F0", "0B0"], ["1B0", "1F0"]])"));

  HttpResponse cell = Post(api, "/api/import", "0F0,0B0\n1F0,1Q0\n");
  ExpectError(cell, 400, "body", "1Q0");
  EXPECT_EQ(Json(cell)["line"], 2);
  EXPECT_EQ(Json(cell)["column"], 2);
  ExpectError(Post(api, "/api/import", "0F0,0F1\n"), 400, "body", "no backward");
  ExpectError(Post(api, "/api/import", "0F0,0F1,0F2,0F3,0F4,0F5,0F6,0F9,0B0\n"), 400, "body",
              "pairs");
  ExpectError(Post(api, "/api/import", "0F0,0F1,0B0,1B1\n"), 400, "body", "");
  ExpectError(Post(api, "/api/import", ""), 400, "body", "empty");
  ExpectError(Post(api, "/api/import?f=-1", "0F0,0B0\n"), 400, "f", "f=-1");
  ExpectError(Post(api, "/api/import?b=1&i=2", "0F0,0B0\n"), 400, "b", "B = I + W");
  ExpectError(Get(api, "/api/import"), 405, "", "POST");
}

TEST(ApiTest, BadParametersAreNamed) {
  Api api = MakeApi();
  ExpectError(Get(api, "/api/schedule?pp=0"), 400, "pp", "pp=0");
  ExpectError(Get(api, "/api/schedule?pp=abc"), 400, "pp", "expected an integer");
  ExpectError(Get(api, "/api/schedule?microbatch=8"), 400, "microbatch",
              "did you mean 'microbatches'?");
  ExpectError(Get(api, "/api/schedule?pp=4&pp=5"), 400, "pp", "more than once");
  ExpectError(Get(api, "/api/schedule?schedule=zb-h3"), 400, "schedule", "did you mean 'zb-h1'?");
  ExpectError(Get(api, "/api/schedule?schedule=1f1b&pp=8&microbatches=4"), 400, "microbatches",
              "m >= pp");
  ExpectError(Get(api, "/api/schedule?schedule=zbv&vpp=3"), 400, "vpp",
              "vpp 3: zbv places");  // the API spells its parameters
  ExpectError(Get(api, "/api/schedule?f=nan"), 400, "f", "f=nan");
  ExpectError(Get(api, "/api/schedule?p2p=-1"), 400, "p2p", "p2p=-1");
  ExpectError(Get(api, "/api/schedule?format=png"), 400, "format",
              "json, columns, csv, chrome, svg, ascii");
  ExpectError(Get(api, "/api/schedule?stage_costs=stage,q%0A0,1"), 400, "stage_costs",
              "unknown column");
  ExpectError(Get(api, "/api/schedule?pp=%zz"), 400, "pp", "malformed");
  // stage_costs is the CSV itself, never a path the server would read.
  const HttpResponse path = Get(api, "/api/schedule?stage_costs=/etc/passwd");
  ExpectError(path, 400, "stage_costs", "stage_costs: ");
  EXPECT_EQ(path.body.find("root"), std::string::npos) << path.body;
  ExpectError(Get(api, "/api/compare?schedule=1f1b"), 400, "schedule", "unknown parameter");
  ExpectError(Get(api, "/api/compare?m=0"), 400, "microbatches", "microbatches=0");
  // Per-stage costs do work when well formed: stage 0 twice as slow.
  HttpResponse sc =
      Get(api, "/api/schedule?schedule=gpipe&pp=2&m=1&f=1&b=1&stage_costs=stage,f%0A0,2");
  ASSERT_EQ(sc.status, 200) << sc.body;
  EXPECT_DOUBLE_EQ(Json(sc)["makespan"].get<double>(), 2 + 1 + 1 + 1);
}

TEST(ApiTest, ErrorMessagesAreBoundedWhateverTheyQuote) {
  Api api = MakeApi();
  // An engine message quotes the value it refuses; a 1 MiB one was once echoed whole (issue 26).
  const HttpResponse r = Get(api, "/api/schedule?schedule=" + std::string(200000, 'z'));
  EXPECT_EQ(r.status, 400);
  EXPECT_LT(r.body.size(), 2048u) << r.body.substr(0, 200);
  EXPECT_NE(Json(r)["error"].get<std::string>().find("(200"), std::string::npos) << r.body;
}

TEST(ApiTest, WorkIsBounded) {
  ServerLimits lim;
  lim.max_actions = 1000;
  lim.max_compare_actions = 20000;
  Api api = MakeApi(lim);
  ExpectError(Get(api, "/api/schedule?pp=8&microbatches=64"), 400, "microbatches", "at most 1000");
  EXPECT_EQ(Get(api, "/api/schedule?pp=8&microbatches=32").status,
            200);  // 2 x 8 x 32 = 512 actions
  ExpectError(Get(api, "/api/compare?pp=16&microbatches=64"), 400, "microbatches", "at most 20000");
  std::string big;
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 600; ++i) {
      if (i) big += ',';
      big.append(std::to_string(r)).append("F").append(std::to_string(i));
    }
    big += "\n";
  }
  ExpectError(Post(api, "/api/import", big), 400, "body", "");
  // The time limit: with none left, a handler stops with 503.
  ServerLimits none;
  none.time_limit = std::chrono::milliseconds(0);
  Api slow = MakeApi(none);
  ExpectError(Get(slow, "/api/schedule"), 503, "", "time limit");
  ExpectError(Get(slow, "/api/compare"), 503, "", "time limit");
  ServerLimits small_body;
  small_body.max_body_bytes = 100;
  Api tight = MakeApi(small_body);
  ExpectError(Post(tight, "/api/import", std::string(101, 'x')), 413, "",
              "exceeds the limit of 100 bytes");
}

TEST(ApiTest, OnlyEmbeddedFilesAreServed) {
  Api api = MakeApi();
  for (const std::string target :
       {"/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "/js/../../etc/passwd", "/..%2f..%2fetc/passwd", "/etc/passwd", "//etc/passwd",
        "/index.html/", "/web/index.html", "/CMakeLists.txt", "/api/../../etc/passwd",
        "/api/nope"}) {
    HttpResponse r = Get(api, target);
    EXPECT_EQ(r.status, 404) << target << " " << r.body;
    EXPECT_EQ(r.body.find("root:"), std::string::npos);
    // An unknown page answers an HTML page; an unknown API path its JSON error.
    const bool api_path = target.rfind("/api/", 0) == 0;
    EXPECT_EQ(r.content_type, api_path ? "application/json" : "text/html; charset=utf-8") << target;
  }
  // The 404 page's base leads back to the root relatively, a "../" per folder of the path (so it
  // also works behind a proxy's path prefix).
  for (const auto& [target, base] :
       std::vector<std::pair<std::string, std::string>>{{"/missing", "<base href=\"./\">"},
                                                        {"/js/missing.js", "<base href=\"../\">"},
                                                        {"/a/b/c.html", "<base href=\"../../\">"},
                                                        {"/a/b/", "<base href=\"../../\">"}}) {
    HttpResponse r = Get(api, target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_NE(r.body.find(base), std::string::npos) << target << ": " << r.body.substr(0, 400);
  }
  ExpectError(Get(api, "/%zz"), 400, "", "malformed");
  ExpectError(Get(api, "/a%00b"), 400, "", "malformed");
  ExpectError(Get(api, "*"), 400, "", "must start with '/'");
  ExpectError(Get(api, "http://127.0.0.1/etc/passwd"), 400, "", "must start with '/'");
  // Every embedded file is the file under web/, byte for byte, with its type; a page has its
  // <!--#chrome NAME--> markers replaced by web/partials/NAME.html, the rest of it unchanged.
  ASSERT_FALSE(EmbeddedFiles().empty());
  const auto source = [](const std::string& rel) {
    std::ifstream in(::infralens::testing::SourcePath("web/" + rel), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string footer = source("partials/footer.html");
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    const std::string rel(f.path);
    EXPECT_NE(rel.rfind("partials/", 0), 0u) << rel << ": the partials are not served";
    HttpResponse r = Get(api, "/" + rel);
    ASSERT_EQ(r.status, 200) << rel;
    const std::string src = source(rel);
    if (!rel.ends_with(".html")) {
      EXPECT_EQ(r.body, src) << rel;
      continue;
    }
    EXPECT_EQ(r.body.find("<!--#chrome"), std::string::npos) << rel;
    // Each stretch of the source between markers is in the page, in order.
    size_t from = 0, at = 0;
    while (from < src.size()) {
      const size_t marker = src.find("<!--#chrome", from);
      const std::string stretch =
          src.substr(from, marker == std::string::npos ? marker : marker - from);
      at = r.body.find(stretch, at);
      ASSERT_NE(at, std::string::npos) << rel << ": " << stretch.substr(0, 80);
      at += stretch.size();
      if (marker == std::string::npos) break;
      from = src.find("-->", marker) + 3;
    }
    EXPECT_NE(r.body.find(footer.substr(0, footer.size() - 1)), std::string::npos) << rel;
  }
  EXPECT_NE(Get(api, "/design.html").body.find(R"(<a href="design.html" aria-current="page">)"),
            std::string::npos);
  EXPECT_EQ(Get(api, "/partials/header.html").status, 404);
  HttpResponse home = Get(api, "/");
  EXPECT_EQ(home.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(home.body, Get(api, "/index.html").body);
  EXPECT_EQ(Get(api, "/js/pipeline.js").content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(Get(api, "/css/workbench.css").content_type, "text/css; charset=utf-8");
}

TEST(ApiTest, SameOriginOnly) {
  Api api = MakeApi();
  const std::string form = "application/x-www-form-urlencoded";
  ExpectError(Post(api, "/api/schedule", "pp=4", form, "http://evil.example"), 403, "",
              "cross-origin");
  ExpectError(Post(api, "/api/import", "0F0,0B0\n", "text/csv", "null"), 403, "", "cross-origin");
  ExpectError(Post(api, "/api/schedule", "pp=4", form, "http://127.0.0.1:9999"), 403, "",
              "cross-origin");
  EXPECT_EQ(Post(api, "/api/schedule", "pp=4", form, "http://127.0.0.1:8080").status, 200);
  EXPECT_EQ(Post(api, "/api/schedule", "pp=4", form).status, 200);  // no Origin: not a browser
  HttpRequest r;
  r.method = "POST";
  r.target = "/api/import";
  r.body = "0F0,0B0\n";
  r.host = "127.0.0.1:8080";
  r.sec_fetch_site = "cross-site";
  ExpectError(api.Handle(r), 403, "", "Sec-Fetch-Site");
  // DNS rebinding: a page at evil.example resolving to 127.0.0.1 sends Host: evil.example.
  r = {};
  r.method = "GET";
  r.target = "/api/schedule";
  r.host = "evil.example:8080";
  ExpectError(api.Handle(r), 403, "", "is not served here");
  r.host = "LOCALHOST:8080";
  EXPECT_EQ(api.Handle(r).status, 200);
  r.host = "[::1]:8080";
  EXPECT_EQ(api.Handle(r).status, 200);
  // No CORS: nothing invites another origin to read the answers.
  HttpResponse ok = Get(api, "/api/compare");
  for (const auto& [k, v] : ok.headers)
    EXPECT_EQ(k.rfind("Access-Control-", 0), std::string::npos) << k;
  EXPECT_NE(Header(ok, "Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  EXPECT_EQ(Header(ok, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(Header(ok, "Cache-Control"), "no-store");
}

TEST(ApiTest, MethodsAndMediaTypes) {
  Api api = MakeApi();
  for (const char* m : {"PUT", "DELETE", "OPTIONS", "PATCH"}) {
    HttpRequest r;
    r.method = m;
    r.target = "/api/schedule";
    r.host = "127.0.0.1:8080";
    HttpResponse res = api.Handle(r);
    EXPECT_EQ(res.status, 405) << m;
    EXPECT_EQ(Header(res, "Allow"), "GET, HEAD, POST");
  }
  ExpectError(Post(api, "/index.html", "x", "text/plain"), 405, "", "GET and HEAD");
  ExpectError(Post(api, "/api/schedule", "pp=4", "text/plain"), 415, "", "form-encoded");
  json index = Json(Get(api, "/api"));
  std::vector<std::string> paths;
  for (const json& e : index["endpoints"]) paths.push_back(e["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "/api/schedule", "/api/compare", "/api/import", "/api/presets",
                       "/api/topology", "/api/comm", "/api/comm-plan", "/api/memory", "/api/plan",
                       "/api/worksheet", "/api/worksheet/check", "/api/export", "/api/scenarios",
                       "/api/explain", "/api/trace/analyze", "/api/trace/synth",
                       "/api/trace/calibrate", "/api/trace/calibrate/sample"}));
  EXPECT_EQ(index["limits"]["max_plan_gpus"], 16384);
  EXPECT_EQ(index["limits"]["max_actions"], 200000);
}

}  // namespace
}  // namespace infralens::server
