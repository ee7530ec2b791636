#include "cli/flags.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <functional>

#include "base/strings.h"

namespace infralens::cli {

struct Flags::Impl {
  enum class Kind { kInt, kDouble, kString, kBool };
  struct Spec {
    std::string names, help, metavar, default_text;
    Kind kind;
    void* out;
    std::string text;  // raw value from the command line
    bool flag_value = false;
    bool given = false;  // appeared on the command line (recorded while the CLI11 app lives)
    CLI::Option* option = nullptr;
  };
  std::string command, summary, usage;
  std::vector<std::string> examples;
  std::vector<std::unique_ptr<Spec>> specs;
  std::string positional_name, positional_help;
  std::vector<std::string>* positionals = nullptr;
};

Flags::Flags(std::string command, std::string summary, std::string usage,
             std::vector<std::string> examples)
    : impl_(std::make_unique<Impl>()) {
  impl_->command = std::move(command);
  impl_->summary = std::move(summary);
  impl_->usage = std::move(usage);
  impl_->examples = std::move(examples);
}

Flags::~Flags() = default;

namespace {
std::string FormatDefault(double v) { return fmt::format("{}", v); }
}  // namespace

void Flags::Int(const std::string& names, int* out, const std::string& help) {
  impl_->specs.push_back(std::make_unique<Impl::Spec>(
      Impl::Spec{names, help, "N", fmt::format("{}", *out), Impl::Kind::kInt, out}));
}
void Flags::OptionalInt(const std::string& names, int* out, const std::string& help) {
  impl_->specs.push_back(
      std::make_unique<Impl::Spec>(Impl::Spec{names, help, "N", "", Impl::Kind::kInt, out}));
}
void Flags::Double(const std::string& names, double* out, const std::string& help) {
  impl_->specs.push_back(std::make_unique<Impl::Spec>(
      Impl::Spec{names, help, "X", FormatDefault(*out), Impl::Kind::kDouble, out}));
}
void Flags::String(const std::string& names, std::string* out, const std::string& help) {
  impl_->specs.push_back(
      std::make_unique<Impl::Spec>(Impl::Spec{names, help, "S", *out, Impl::Kind::kString, out}));
}
void Flags::Bool(const std::string& names, bool* out, const std::string& help) {
  impl_->specs.push_back(
      std::make_unique<Impl::Spec>(Impl::Spec{names, help, "", "", Impl::Kind::kBool, out}));
}
void Flags::Positionals(const std::string& name, std::vector<std::string>* out,
                        const std::string& help) {
  impl_->positional_name = name;
  impl_->positional_help = help;
  impl_->positionals = out;
}

namespace {
// The first long name of a CLI11 names string: "-m,--microbatches" -> "--microbatches".
std::string LongName(const std::string& names) {
  for (auto part : Split(names, ',')) {
    if (part.substr(0, 2) == "--") return std::string(part);
  }
  return std::string(Split(names, ',')[0]);
}
}  // namespace

namespace {
bool LooksLikeNumber(const std::string& a) {
  return a.size() > 1 && a[0] == '-' &&
         (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.');
}
}  // namespace

// Our own usage errors for what CLI11 words awkwardly ("The following arguments were not expected:
// 64 --gpus"): an unknown flag with the nearest known one, a flag missing its value, a stray
// argument. One line each, naming the flag and pointing at the help.
Status Flags::CheckArguments(const std::vector<std::string>& args) const {
  std::vector<std::string> names;
  auto find = [&](const std::string& name) -> const Impl::Spec* {
    for (const auto& spec : impl_->specs) {
      for (auto part : Split(spec->names, ',')) {
        if (part == name) return spec.get();
      }
    }
    return nullptr;
  };
  for (const auto& spec : impl_->specs) {
    for (auto part : Split(spec->names, ',')) names.emplace_back(part);
  }
  names.emplace_back("--help");
  names.emplace_back("--version");
  const std::string help = fmt::format("(see infralens {} --help)", impl_->command);
  // Each flag once: the first value given of a flag repeated, to name it in the refusal.
  std::vector<std::pair<const Impl::Spec*, std::string>> seen;
  auto once = [&](const Impl::Spec* spec, const std::string& value) -> Status {
    for (const auto& [s, first] : seen) {
      if (s != spec) continue;
      const std::string name = LongName(spec->names);
      if (spec->kind == Impl::Kind::kBool) {
        return InvalidArgument(fmt::format("{} given twice: give it once {}", name, help));
      }
      return InvalidArgument(fmt::format("{} given twice ({}, then {}): give it once {}", name,
                                         first.substr(0, 80), value.substr(0, 80), help));
    }
    seen.emplace_back(spec, value);
    return Status::Ok();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || LooksLikeNumber(a)) {
      if (impl_->positionals == nullptr) {
        return InvalidArgument(fmt::format(
            "unexpected argument '{}': this command takes only flags {}", a.substr(0, 80), help));
      }
      continue;
    }
    if (a == "-h" || a == "--help") continue;
    const size_t eq = a.find('=');
    std::string name = a.substr(0, eq);
    const Impl::Spec* spec = find(name);
    if (spec == nullptr && name.size() > 2 && name[1] != '-') {
      spec = find(name.substr(0, 2));  // "-m8": a short flag with its value attached
      if (spec != nullptr) {
        RETURN_IF_ERROR(once(spec, name.substr(2)));
        continue;
      }
    }
    if (spec == nullptr) {
      const std::string close = ClosestMatch(name, names);
      return InvalidArgument(fmt::format("unknown flag {}{} {}", name.substr(0, 80),
                                         close.empty() ? "" : "; did you mean " + close + "?",
                                         help));
    }
    if (spec->kind == Impl::Kind::kBool) {
      RETURN_IF_ERROR(once(spec, ""));
      continue;
    }
    if (eq != std::string::npos) {
      RETURN_IF_ERROR(once(spec, a.substr(eq + 1)));
      continue;
    }
    if (i + 1 >= args.size()) {
      return InvalidArgument(fmt::format("{} needs a value ({}) {}", name, spec->help, help));
    }
    ++i;
    RETURN_IF_ERROR(once(spec, args[i]));
  }
  return Status::Ok();
}

Status Flags::Parse(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(CheckArguments(args));
  CLI::App app(impl_->summary, "infralens " + impl_->command);
  app.set_help_flag("-h,--help");
  for (auto& spec : impl_->specs) {
    if (spec->kind == Impl::Kind::kBool) {
      spec->option = app.add_flag(spec->names, spec->flag_value, spec->help);
    } else {
      spec->option = app.add_option(spec->names, spec->text, spec->help);
    }
  }
  if (impl_->positionals != nullptr)
    app.add_option(impl_->positional_name, *impl_->positionals, impl_->positional_help);
  // CLI11 wants argv in reverse order for its vector overload.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    help_requested_ = true;
    return Status::Ok();
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    return InvalidArgument(fmt::format("{} (see infralens {} --help)", what, impl_->command));
  }
  for (auto& spec : impl_->specs) {
    spec->given = spec->option->count() > 0;
    spec->option = nullptr;  // owned by `app`, which ends with this function
    if (!spec->given) continue;
    const std::string name = LongName(spec->names);
    switch (spec->kind) {
      case Impl::Kind::kBool:
        *static_cast<bool*>(spec->out) = spec->flag_value;
        break;
      case Impl::Kind::kString:
        *static_cast<std::string*>(spec->out) = spec->text;
        break;
      case Impl::Kind::kInt: {
        auto v = ParseInt(spec->text);
        if (!v || *v < INT32_MIN || *v > INT32_MAX) {
          return InvalidArgument(fmt::format("{} {}: expected an integer", name, spec->text));
        }
        *static_cast<int*>(spec->out) = static_cast<int>(*v);
        break;
      }
      case Impl::Kind::kDouble: {
        auto v = ParseDouble(spec->text);
        if (!v) return InvalidArgument(fmt::format("{} {}: expected a number", name, spec->text));
        *static_cast<double*>(spec->out) = *v;
        break;
      }
    }
  }
  return Status::Ok();
}

bool Flags::Given(const std::string& name) const {
  for (const auto& spec : impl_->specs) {
    if (LongName(spec->names) == name) return spec->given;
  }
  return false;
}

std::string Flags::Help() const {
  std::string out = fmt::format("infralens {}: {}\n\nusage: {}\n\noptions:\n", impl_->command,
                                impl_->summary, impl_->usage);
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& spec : impl_->specs) {
    std::string left = "  ";
    auto parts = Split(spec->names, ',');
    for (size_t i = 0; i < parts.size(); ++i) left += (i ? ", " : "") + std::string(parts[i]);
    if (spec->kind != Impl::Kind::kBool) left += " " + spec->metavar;
    std::string right = spec->help;
    if (spec->kind != Impl::Kind::kBool && !spec->default_text.empty())
      right += " [" + spec->default_text + "]";
    rows.emplace_back(left, right);
  }
  rows.emplace_back("  -h, --help", "print this help");
  rows.emplace_back("  --version", "print the version");
  size_t width = 0;
  for (const auto& [l, r] : rows) width = std::max(width, l.size());
  for (const auto& [l, r] : rows) out += fmt::format("{:<{}}  {}\n", l, width, r);
  if (!impl_->examples.empty()) {
    out += "\nexamples:\n";
    for (const auto& e : impl_->examples) out += "  " + e + "\n";
  }
  return out;
}

void AddOutputFlags(Flags& flags, std::string* format, bool* json, std::string* output,
                    const std::string& format_help) {
  flags.String("--format", format, format_help);
  flags.Bool("--json", json, "same as --format json");
  AddOutputFile(flags, output);
}

void AddOutputFile(Flags& flags, std::string* output) {
  flags.String("-o,--output", output, "write to this file instead of stdout");
}

Status ResolveOutputFormat(std::string* format, bool json,
                           const std::vector<std::string>& allowed) {
  if (json) *format = "json";
  // One name for the aligned plain-text output, "table" (docs/cli.md); "text", which `comm` used
  // to call it, is the same output.
  if (*format == "text" && std::find(allowed.begin(), allowed.end(), "table") != allowed.end()) {
    *format = "table";
  }
  if (std::find(allowed.begin(), allowed.end(), *format) != allowed.end()) return Status::Ok();
  std::string list;
  for (size_t k = 0; k < allowed.size(); ++k) {
    list += (k == 0 ? "" : k + 1 == allowed.size() ? " or " : ", ") + allowed[k];
  }
  return InvalidArgument(fmt::format("--format {}: expected {}", *format, list));
}

}  // namespace infralens::cli
