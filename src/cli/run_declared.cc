#include "cli/run_declared.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "base/atomic_file.h"
#include "base/terminal.h"
#include "cli/flags.h"

namespace infralens::cli {

namespace {

// A retired flag is refused with the message that says what replaced it, before parsing (the
// parser would call it unknown and guess a near name).
Status CheckRetired(const request::CommandInfo& info, const std::vector<std::string>& args) {
  for (const request::RetiredFlag& r : info.retired) {
    for (const std::string& a : args) {
      if (a == "--") break;
      if (a == r.flag || a.rfind(r.flag + "=", 0) == 0) return InvalidArgument(r.message);
    }
  }
  return Status::Ok();
}

// A bar on a terminal's stderr once long work has run for a second (not with NO_COLOR: plain
// output, as cli/progress.h); cleared by the destructor.
class ProgressBar {
 public:
  ProgressBar() : tty_(ColorEnabled(stderr)), start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (drew_) std::fprintf(stderr, "\r%80s\r", "");
  }
  void Draw(int64_t done, int64_t total) {
    if (!tty_) return;
    if (std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1) && done < total) return;
    const int width = 30;
    const int filled = static_cast<int>(width * done / std::max<int64_t>(1, total));
    std::fprintf(stderr, "\r  searching [%s%s] %lld/%lld layouts", std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), static_cast<long long>(done),
                 static_cast<long long>(total));
    drew_ = true;
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  bool drew_ = false;
};

}  // namespace

Status RunDeclared(const request::Command& command, const std::vector<std::string>& args,
                   CliIO& io) {
  const request::CommandInfo& info = command.info();
  RETURN_IF_ERROR(CheckRetired(info, args));
  Flags flags(info.name, info.summary, info.usage, info.examples);
  request::OptionFilter options(flags, info.api_only);  // the API's own are not flags
  std::unique_ptr<request::CommandRun> run = command.Declare(options);
  std::string format = info.formats.empty() ? "" : info.formats[0];
  std::string output;
  bool json = false;
  const bool several = info.formats.size() > 1;
  if (several) {
    AddOutputFlags(flags, &format, &json, &output, request::FormatHelp(info));
  } else if (!info.own_output) {
    AddOutputFile(flags, &output);
  }
  RETURN_IF_ERROR(flags.Parse(args));
  if (flags.help_requested()) {
    io.out << flags.Help();
    return Status::Ok();
  }
  if (several) RETURN_IF_ERROR(ResolveOutputFormat(&format, json, info.formats));
  request::RunContext ctx;
  ctx.given = GivenOf(flags);
  ctx.format = format;
  ctx.color = io.color && (output.empty() || output == "-");
  ctx.note = [&io](const std::string& message) { io.err << message; };
  std::string after_text;
  Status after_status;
  ctx.note_after = [&after_text](const std::string& text) { after_text += text; };
  ctx.fail_after = [&after_status](const Status& st) {
    if (after_status.ok()) after_status = st;
  };
  ctx.output = output;
  ctx.term_width = io.term_width;
  // A streamed document goes to stdout as it comes, or to a temporary renamed over the -o file
  // at the end (none is left behind when the run fails).
  const bool to_stdout = output.empty() || output == "-";
  AtomicFile file;
  bool streamed = false;
  auto with_flag = [](const Status& st) {
    return st.ok() ? st : Status(st.code(), "-o " + st.message());
  };
  ctx.stream = [&](std::string_view piece) -> Status {
    if (to_stdout) {
      io.out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
      streamed = true;
      return Status::Ok();
    }
    if (!streamed) RETURN_IF_ERROR(with_flag(file.Open(output)));
    streamed = true;
    return with_flag(file.Write(piece));
  };
  std::optional<ProgressBar> bar;
  bar.emplace();
  ctx.progress = [&bar](int64_t done, int64_t total) { bar->Draw(done, total); };
  StatusOr<std::string> document = run->Document(ctx);
  bar.reset();  // the line cleared before any message
  if (!document.ok()) return document.status();
  if (streamed) {
    if (!to_stdout) RETURN_IF_ERROR(with_flag(file.Commit()));
  } else {
    RETURN_IF_ERROR(WriteOutput(output, *document, io));
  }
  io.err << after_text;
  return after_status;
}

}  // namespace infralens::cli
