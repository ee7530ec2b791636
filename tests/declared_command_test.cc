// One declared command (request/command.h) through both of its front ends: the CLI's flags
// (cli::RunDeclared) and the API's parameters (server::RegisterCommand) come from the same
// declaration, with the same defaults, checks and documents.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/run_declared.h"
#include "request/command.h"
#include "server/api_test_util.h"
#include "server/command_api.h"

namespace infralens {
namespace {

using server::testing::ExpectError;
using server::testing::Get;
using server::testing::Ok;

// A toy command: the sum of an arithmetic series a, a+d, ..., n terms.
struct SeriesQuery {
  int n = 4;
  double a = 1;
  double d = 2;
  std::string label = "series";
  int threads = 0;  // the CLI's own
};

const request::Command& Series() {
  static const request::Command kCommand = request::MakeCommand<SeriesQuery, double>(
      {.name = "series",
       .summary = "the sum of an arithmetic series",
       .usage = "infralens series [--n N] [--a A] [--d D]",
       .examples = {"infralens series --n 10"},
       .formats = {"table", "json"},
       .format_help = "table or json",
       .retired = {{"--count", "--count: say --n now"}},
       .cli_only = {"--threads"}},
      [](SeriesQuery& q, request::FlagSink& f) {
        f.Int("--n", &q.n, "terms");
        f.Double("--a", &q.a, "first term");
        f.Double("--d", &q.d, "difference");
        f.String("--label", &q.label, "a name");
        f.Int("--threads", &q.threads, "worker threads");
      },
      [](const SeriesQuery& q, const request::RunContext&) -> StatusOr<double> {
        if (q.n < 1) return InvalidArgument("‹n› " + std::to_string(q.n) + ": must be 1 or more");
        double sum = 0;
        for (int k = 0; k < q.n; ++k) sum += q.a + k * q.d;
        return sum;
      },
      [](const double& sum, const SeriesQuery& q,
         const request::RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.format == "json") {
          nlohmann::json j = {{"label", q.label}, {"sum", sum}};
          return j.dump(ctx.json_indent == 0 ? -1 : ctx.json_indent);
        }
        return q.label + " " + std::to_string(static_cast<int64_t>(sum)) + "\n";
      });
  return kCommand;
}

struct CliRun {
  Status status;
  std::string out, err;
};
CliRun RunToyCli(const request::Command& command, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::CliIO io{out, err};
  Status st = cli::RunDeclared(command, args, io);
  return {st, out.str(), err.str()};
}
CliRun RunSeries(const std::vector<std::string>& args) { return RunToyCli(Series(), args); }

TEST(DeclaredCommandTest, CliParsesTheDeclaredOptions) {
  // n(2a + (n-1)d)/2: 10 terms of 1, 3, 5, ... sum to 100; the defaults 4 terms to 16.
  EXPECT_EQ(RunSeries({"--n", "10"}).out, "series 100\n");
  EXPECT_EQ(RunSeries({}).out, "series 16\n");
  const CliRun json = RunSeries({"--n", "3", "--a", "2", "--d", "0.5", "--json"});
  ASSERT_TRUE(json.status.ok()) << json.status.message();
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(json.out)["sum"].get<double>(), 7.5);
  // The engine's field is spelled as the flag; the retired flag says what replaced it.
  const CliRun bad = RunSeries({"--n", "0"});
  EXPECT_EQ(bad.status.ExitCode(), 2);
  EXPECT_EQ(bad.status.message(), "--n 0: must be 1 or more");
  EXPECT_EQ(RunSeries({"--count", "3"}).status.message(), "--count: say --n now");
  EXPECT_EQ(RunSeries({"--format", "svg"}).status.ExitCode(), 2);
  const CliRun help = RunSeries({"--help"});
  EXPECT_NE(help.out.find("--threads"), std::string::npos);
  EXPECT_NE(help.out.find("infralens series --n 10"), std::string::npos);
}

TEST(DeclaredCommandTest, ApiReadsTheSameOptionsAsParameters) {
  server::Api api(server::ServerLimits{}, server::AccessPolicy{});
  server::RegisterCommand(api, Series(),
                          {.path = "/api/series", .bounds = {{"n", 1, 1000}}, .light = true});
  nlohmann::json j = Ok(Get(api, "/api/series?n=10&label=odd"));
  EXPECT_DOUBLE_EQ(j["sum"].get<double>(), 100);
  EXPECT_EQ(j["label"], "odd");
  EXPECT_DOUBLE_EQ(Ok(Get(api, "/api/series"))["sum"].get<double>(), 16);  // the defaults
  // The route's bound before any work, then the engine's check spelled as a parameter.
  ExpectError(Get(api, "/api/series?n=1001"), 400, "n", "from 1 to 1000");
  ExpectError(Get(api, "/api/series?d=abc"), 400, "d", "expected a number");
  // The CLI's own option is neither listed nor read.
  const server::Endpoint& e = api.endpoints().back();
  for (const server::ParamSpec& p : e.params) EXPECT_NE(p.name, "threads");
  EXPECT_EQ(Get(api, "/api/series?threads=2").status, 400);
  EXPECT_TRUE(api.IsLight("/api/series"));
}

TEST(DeclaredCommandTest, ApiEngineErrorsNameTheParameter) {
  server::Api api(server::ServerLimits{}, server::AccessPolicy{});
  server::RegisterCommand(api, Series(), {.path = "/api/series"});
  ExpectError(Get(api, "/api/series?n=0"), 400, "n", "n 0: must be 1 or more");
  // A name is at most 100 bytes.
  ExpectError(Get(api, "/api/series?label=" + std::string(101, 'x')), 400, "label", "at most 100");
}

// A second toy, for what an endpoint takes from a declaration beyond its options: an option and
// a format of the API alone, a positional argument as a parameter, a download's file name, the
// action limit per format and the cache of a cacheable command.
struct TallyQuery {
  std::vector<std::string> names;
  bool detail = false;  // the API's alone
};
struct Tally {
  std::string name;
  int64_t max_actions = 0;
  bool detail = false;
};
std::atomic<int> tally_runs{0};

const request::Command& TallyCommand() {
  static const request::Command kCommand = request::MakeCommand<TallyQuery, Tally>(
      {.name = "tally",
       .summary = "one name, counted",
       .usage = "infralens tally [NAME]",
       .formats = {"table", "json"},
       .api_formats = {"columns"},
       .api_only = {"--detail"},
       .action_scale = {{.format = "columns", .numerator = 3, .denominator = 2}},
       .cacheable = true},
      [](TallyQuery& q, request::FlagSink& f) {
        f.Positionals("NAME", &q.names, "a name");
        f.Bool("--detail", &q.detail, "more");
      },
      [](const TallyQuery& q, const request::RunContext& ctx) -> StatusOr<Tally> {
        ++tally_runs;
        const std::string name = q.names.empty() ? "all" : q.names[0];
        if (name == "bad") return InvalidArgument("\u2039NAME\u203a 'bad': no such name");
        return Tally{name, ctx.max_actions, q.detail};
      },
      [](const Tally& t, const TallyQuery&,
         const request::RunContext& ctx) -> StatusOr<std::string> {
        if (ctx.format == "table") return t.name + "\n";
        return nlohmann::json({{"name", t.name},
                               {"max_actions", t.max_actions},
                               {"detail", t.detail},
                               {"format", ctx.format}})
            .dump();
      },
      [](const Tally& t, const TallyQuery&) { return "tally_" + t.name; });
  return kCommand;
}

CliRun RunTally(const std::vector<std::string>& args) { return RunToyCli(TallyCommand(), args); }

TEST(DeclaredCommandTest, TheCliLeavesOutWhatIsTheApis) {
  EXPECT_EQ(RunTally({"x"}).out, "x\n");
  EXPECT_EQ(RunTally({"--detail"}).status.ExitCode(), 2);
  EXPECT_EQ(RunTally({"--format", "columns"}).status.ExitCode(), 2);
  EXPECT_EQ(RunTally({"--help"}).out.find("--detail"), std::string::npos);
  // The positional's field as the help shows it.
  EXPECT_EQ(RunTally({"bad"}).status.message(), "NAME 'bad': no such name");
}

TEST(DeclaredCommandTest, TheApiTakesFromTheDeclarationWhatTheCliDoesNot) {
  server::Api api(server::ServerLimits{}, server::AccessPolicy{});
  server::RegisterCommand(api, TallyCommand(),
                          {.path = "/api/tally",
                           .methods = {"GET"},
                           .formats = {"json", "columns", "table"},
                           .max_actions = 1000});
  std::vector<std::string> names;
  for (const server::ParamSpec& p : api.endpoints().back().params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"name", "detail", "format", "download"}));
  // The positional is `name`; the API's option is read.
  nlohmann::json j = Ok(Get(api, "/api/tally?name=x&detail=1"));
  EXPECT_EQ(j["name"], "x");
  EXPECT_EQ(j["detail"], true);
  EXPECT_EQ(j["max_actions"], 1000);
  // The API's format, its limit 3/2 of the route's, and its file named by the run.
  server::HttpResponse compact = Get(api, "/api/tally?name=x&format=columns&download=1");
  EXPECT_EQ(Ok(compact)["max_actions"], 1500);
  EXPECT_EQ(compact.content_type, "application/json");
  EXPECT_EQ(server::testing::Header(compact, "Content-Disposition"),
            "attachment; filename=\"tally_x.json\"");
  EXPECT_EQ(server::testing::Header(Get(api, "/api/tally?name=x&format=table&download=1"),
                                    "Content-Disposition"),
            "attachment; filename=\"tally_x.txt\"");
  EXPECT_EQ(server::testing::Header(Get(api, "/api/tally?name=x"), "Content-Disposition"), "");
  // The positional's field spelled as its parameter.
  ExpectError(Get(api, "/api/tally?name=bad"), 400, "name", "name 'bad': no such name");
  ExpectError(Get(api, "/api/tally?name=" + std::string(101, 'x')), 400, "name", "at most 100");
}

TEST(DeclaredCommandTest, ACacheableCommandIsComputedOncePerQuery) {
  server::ServerLimits warm;
  warm.warm_caches = true;
  const int before = tally_runs;
  server::Api api(warm, server::AccessPolicy{});
  server::RegisterCommand(api, TallyCommand(), {.path = "/api/tally"});
  // The default query was started at registration: the request waits for that run.
  EXPECT_EQ(Ok(Get(api, "/api/tally"))["name"], "all");
  EXPECT_EQ(tally_runs, before + 1);
  const std::string first = Get(api, "/api/tally?name=y").body;
  EXPECT_EQ(Get(api, "/api/tally?name=y").body, first);
  EXPECT_EQ(tally_runs, before + 2);
  // The query as read is the key: 0 and no are one value.
  Ok(Get(api, "/api/tally?name=z&detail=0"));
  Ok(Get(api, "/api/tally?name=z&detail=no"));
  EXPECT_EQ(tally_runs, before + 3);
  // A failure is not kept: asked again, computed again.
  for (int k = 0; k < 2; ++k) ExpectError(Get(api, "/api/tally?name=bad"), 400, "name", "no such");
  EXPECT_EQ(tally_runs, before + 5);
  // Beyond kMaxCachedAnswers, a query is computed for its request alone, each time.
  for (size_t k = 0; k < server::kMaxCachedAnswers; ++k)
    Ok(Get(api, "/api/tally?name=n" + std::to_string(k)));
  const int full = tally_runs;
  EXPECT_EQ(Ok(Get(api, "/api/tally?name=extra"))["name"], "extra");
  EXPECT_EQ(Ok(Get(api, "/api/tally?name=extra"))["name"], "extra");
  EXPECT_EQ(tally_runs, full + 2);
}

}  // namespace
}  // namespace infralens
