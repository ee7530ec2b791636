// infralens serve: the lab workbench in the browser, a JSON API over the same engine, and the
// pages built into the binary (docs/workbench.md).
#include <fmt/format.h>

#include "base/strings.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "server/http_server.h"

namespace infralens::cli {

Status RunServe(const std::vector<std::string>& args, CliIO& io) {
  server::ServeOptions opt;
  std::string allow_hosts;
  int time_limit_ms = static_cast<int>(opt.limits.time_limit.count());
  Flags flags("serve",
              "the lab workbench in the browser: pages and a JSON API over the same engine",
              "infralens serve [--host 127.0.0.1] [--port 8080]",
              {"infralens serve", "infralens serve --port 9000",
               "infralens serve --host 0.0.0.0 --port 8080   # reachable from other machines: see "
               "the warning"});
  flags.String("--host", &opt.host,
               "address to listen on; anything but loopback is reachable from other machines");
  flags.Int("--port", &opt.port, "TCP port; 0 picks a free one");
  flags.Int("--workers", &opt.threads, "worker threads (requests served at once)");
  flags.String("--allow-host", &allow_hosts,
               "comma-separated extra Host names to accept (e.g. a DNS name)");
  flags.Int("--time-limit-ms", &time_limit_ms, "wall time one request may compute");
  int max_search_layouts = 0;
  flags.Int("--max-search-layouts", &max_search_layouts,
            "layouts one design search evaluates before it answers with a partial ranking (0: "
            "only the time limit stops it)");
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (opt.port < 0 || opt.port > 65535)
    return InvalidArgument(fmt::format("--port {}: expected 0 to 65535", opt.port));
  if (opt.threads < 1 || opt.threads > 256) {
    return InvalidArgument(fmt::format("--workers {}: expected 1 to 256", opt.threads));
  }
  if (time_limit_ms < 1 || time_limit_ms > 600'000) {
    return InvalidArgument(fmt::format("--time-limit-ms {}: expected 1 to 600000", time_limit_ms));
  }
  if (opt.host.empty()) return InvalidArgument("--host: give an address such as 127.0.0.1");
  if (max_search_layouts < 0 || max_search_layouts > 10'000'000) {
    return InvalidArgument(
        fmt::format("--max-search-layouts {}: expected 0 to 10000000", max_search_layouts));
  }
  opt.limits.time_limit = std::chrono::milliseconds(time_limit_ms);
  opt.limits.max_search_layouts = max_search_layouts;
  // A busy machine computes the scenario list in 5-10 s: start it now, let requests wait for it.
  opt.limits.cached_wait = std::chrono::seconds(60);
  opt.limits.warm_caches = true;
  for (auto h : Split(allow_hosts, ',')) {
    if (!Trim(h).empty()) opt.allow_hosts.emplace_back(Trim(h));
  }
  if (!server::IsLoopbackHost(opt.host)) {
    io.err << fmt::format(
        "infralens serve: warning: listening on {}, not loopback: other machines can reach this "
        "server. It has no "
        "authentication and no TLS; serve on 127.0.0.1 unless you mean it.\n",
        opt.host);
  }
  server::HttpServer srv(opt);
  RETURN_IF_ERROR(srv.Bind());
  const std::string shown = opt.host.find(':') != std::string::npos && opt.host.front() != '['
                                ? "[" + opt.host + "]"
                                : opt.host;
  // The address is the data (a script reads it); the rest is a message.
  io.out << fmt::format("http://{}:{}/\n", shown, srv.port());
  io.out.flush();
  io.err << "infralens serve: the lab workbench is up; open the address above in a browser (Ctrl-C "
            "stops it)\n";
  io.err.flush();
  return srv.Run();
}

}  // namespace infralens::cli
