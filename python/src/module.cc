// The C++ half of `import infralens` (python/infralens/__init__.py is the other): two entry
// points into the same engine the CLI and the web API run, so that a Python result is the JSON
// the API or the CLI gives for the same request, parameter for parameter.
//
//   _infralens.api(path, form, method="POST") -> (status, content_type, body)
//       One API request (server::Api::Handle, every endpoint of `infralens serve`) in process:
//       `form` is the form-encoded parameters, named as the API names them. The limits are the
//       CLI's, not a shared server's (kModuleLimits).
//   _infralens.command(args) -> (code, stdout, stderr, message, parameter)
//       One CLI command whose input is files (validate, trace ...), run by cli::RunCommand
//       with its output captured; code 0 ok, 1 failure, 2 usage error (RunCli's rule),
//       message and parameter (the API name the message is about) when it failed.
//   _infralens.summarize(path, ...) -> str
//       One rank's trace file summarised (trace/summary.h), as `infralens trace summarize`.
//   _infralens.analyze_summaries(texts, labels, align_clocks) -> str
//       Summaries merged into the analysis (`trace analyze --summaries --json`).
//   _infralens.expand_paths(paths) -> list[str]
//       The trace files `trace analyze` reads for these paths (folders expanded, sorted).
// The last three raise ValueError with the engine's message.
//
// All release the GIL while the engine runs (a Dask worker runs tasks on threads).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "base/json_writer.h"
#include "cli/cli.h"
#include "server/api.h"
#include "trace/analysis.h"
#include "trace/loader.h"
#include "trace/report.h"
#include "trace/summary.h"

namespace py = pybind11;
using infralens::Status;
using infralens::StatusCode;
namespace cli = infralens::cli;
namespace server = infralens::server;

namespace {

// The CLI's bounds rather than a shared server's: a notebook's request is its own machine's work.
server::ServerLimits ModuleLimits() {
  server::ServerLimits l;
  l.max_body_bytes = size_t{64} << 20;
  l.params.max_value_bytes = size_t{64} << 20;
  l.max_actions = 50'000'000;  // `infralens schedule` goes to 50 million
  l.max_compare_actions = 200'000'000;
  l.max_plan_gpus = 65'536;                     // as `infralens plan`
  l.time_limit = std::chrono::hours(24 * 365);  // no time limit: the caller interrupts
  l.upload_time_limit = l.time_limit;
  l.warm_caches = false;
  return l;
}

const server::Api& TheApi() {
  static const server::Api* api = [] {
    // No Host check: nothing here is reachable from a browser.
    auto* a = new server::Api(ModuleLimits(), server::AccessPolicy{{}});
    server::RegisterAllEndpoints(*a);
    return a;
  }();
  return *api;
}

std::tuple<int, std::string, py::bytes> CallApi(const std::string& path, const std::string& form,
                                                const std::string& method) {
  server::HttpRequest req;
  req.method = method;
  if (method == "GET") {
    req.target = form.empty() ? path : path + "?" + form;
  } else {
    req.target = path;
    req.body = form;
    req.content_type = "application/x-www-form-urlencoded";
  }
  server::HttpResponse res;
  {
    py::gil_scoped_release release;
    res = TheApi().Handle(req);
  }
  // bytes: a download (export's file) need not be UTF-8; the Python side decodes JSON.
  return {res.status, res.content_type, py::bytes(res.body)};
}

// The commands whose inputs are files, run as the CLI runs them (the API has no endpoint that
// reads the caller's files).
std::tuple<int, std::string, std::string, std::string, std::string> RunCommand(
    const std::vector<std::string>& args) {
  if (args.empty()) throw py::value_error("command: no arguments");
  std::ostringstream out, err;
  cli::CliIO io{out, err, /*color=*/false, /*term_width=*/100};
  Status status = Status::Ok();
  {
    py::gil_scoped_release release;
    try {
      status = cli::RunCommand(args, io);
    } catch (const std::bad_alloc&) {
      status = Status(StatusCode::kResourceExhausted, "out of memory");
    } catch (const std::exception& e) {
      status = Status(StatusCode::kInternal, std::string("internal error: ") + e.what());
    }
  }
  // RunCli's exit codes: usage errors (InvalidArgument) 2, other failures 1.
  const int code = status.ok() ? 0 : status.code() == StatusCode::kInvalidArgument ? 2 : 1;
  std::string message = status.ok() ? "" : status.message();
  std::string parameter = status.ok() ? "" : server::ParameterOfMessage(message);
  return {code, out.str(), err.str(), std::move(message), std::move(parameter)};
}

[[noreturn]] void Raise(const Status& s) { throw py::value_error(s.message()); }

std::string Summarize(const std::string& path, bool hta_compat, bool include_last_step,
                      const std::string& comm_kernels, const std::string& memory_kernels) {
  infralens::trace::AnalysisOptions o;
  o.hta_compat = hta_compat;
  o.include_last_step = include_last_step;
  o.comm_pattern = comm_kernels;
  o.memory_pattern = memory_kernels;
  infralens::StatusOr<std::string> s = std::string();
  {
    py::gil_scoped_release release;
    s = infralens::trace::SummarizeTraceFile(path, o);
  }
  if (!s.ok()) Raise(s.status());
  return *std::move(s);
}

std::string AnalyzeSummaries(const std::vector<std::string>& texts,
                             const std::vector<std::string>& labels, bool align_clocks) {
  if (texts.size() != labels.size()) throw py::value_error("one label per summary");
  std::string out;
  Status status = Status::Ok();
  {
    py::gil_scoped_release release;
    std::vector<infralens::trace::SummaryText> summaries;
    summaries.reserve(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) summaries.push_back({labels[i], texts[i]});
    auto a = infralens::trace::AnalyzeSummaries(summaries, align_clocks);
    if (a.ok()) {
      infralens::JsonWriter w;  // as `trace analyze --json` writes it
      infralens::trace::WriteAnalysisJson(w, *a);
      out = w.str();
    } else {
      status = a.status();
    }
  }
  if (!status.ok()) Raise(status);
  return out;
}

std::vector<std::string> ExpandPaths(const std::vector<std::string>& paths) {
  auto files = infralens::trace::ExpandTracePaths(paths);
  if (!files.ok()) Raise(files.status());
  return *std::move(files);
}

}  // namespace

PYBIND11_MODULE(_infralens, m) {
  m.doc() = "InfraLens engine bindings; use the `infralens` package, not this module.";
  m.attr("__version__") = INFRALENS_VERSION;
  m.def("api", &CallApi, py::arg("path"), py::arg("form"), py::arg("method") = "POST",
        "One API request in process: (status, content_type, body bytes).");
  m.def("command", &RunCommand, py::arg("args"),
        "One CLI command in process: (exit code, stdout, stderr, error message, parameter).");
  m.def("summarize", &Summarize, py::arg("path"), py::arg("hta_compat") = false,
        py::arg("include_last_step") = false, py::arg("comm_kernels") = "",
        py::arg("memory_kernels") = "", "One rank's trace file as a summary (JSON text).");
  m.def("analyze_summaries", &AnalyzeSummaries, py::arg("texts"), py::arg("labels"),
        py::arg("align_clocks") = false,
        "Summaries merged into the analysis JSON (`trace analyze --summaries --json`).");
  m.def("parameter_of", &server::ParameterOfMessage, py::arg("message"),
        "The API parameter a CLI message is about (\"--pp 0: ...\" -> \"pp\"), or \"\".");
  m.def("expand_paths", &ExpandPaths, py::arg("paths"),
        "The trace files `trace analyze` reads for these paths.");
}
