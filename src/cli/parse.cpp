// `ngxtls parse PATH|- [--single-file] [--format json|crossplane] [--conf-prefix DIR]`:
// prints the syntax tree. Exit 0 on success; a syntax or input error is an input_error
// (exit 2, `ngxtls: error: FILE:LINE:COL: MESSAGE` from main.cpp); in crossplane format
// crossplane's failed-status JSON goes to stdout first, as crossplane does.

#include <unistd.h>

#include <iostream>
#include <iterator>
#include <memory>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "config/loader.hpp"
#include "report/format.hpp"

namespace ngxtls::cli {

namespace {

struct parse_args {
  std::string path;
  bool single_file = false;
  std::string format = "json";
  std::string conf_prefix;
};

config::config load_parse_input(const parse_args& a) {
  config::load_options o;
  o.single_file = a.single_file;
  if (!a.conf_prefix.empty()) o.conf_prefix = a.conf_prefix;
  if (a.path != "-") return config::load_file(a.path, o);
  // Bounded while it is read: a 3 GB stream must not fill memory before any check.
  config::stored_text text = config::read_stream_bounded(STDIN_FILENO, "<stdin>", o.max_file_bytes);
  if (config::looks_like_dump(text.bytes)) return config::load_dump(std::move(text), "<stdin>", o);
  auto disk = config::make_disk_source();
  return config::load_buffer(std::move(text), "<stdin>", *disk, o);
}

int run_parse(const parse_args& a) {
  const auto& format = report::format_for(report::command::parse, a.format);
  config::config cfg;
  try {
    cfg = load_parse_input(a);
  } catch (const input_error& e) {
    if (format.parse_error) {
      format.parse_error(e, std::cout);
      std::cout.flush();
    }
    throw;
  }
  report::output_context ctx;
  ctx.single_file = a.single_file;
  format.parse(cfg, ctx, std::cout);
  std::cout.flush();
  return exit_ok;
}

}  // namespace

void register_parse(CLI::App& app, std::function<int()>& run) {
  auto args = std::make_shared<parse_args>();
  auto* sub = app.add_subcommand("parse", "Print the syntax tree of an nginx configuration");
  sub->add_option("path", args->path, "Main config file, a saved `nginx -T` dump, or - for stdin")
      ->required();
  sub->add_flag("--single-file", args->single_file, "Do not follow includes (as crossplane)");
  sub->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember(report::format_names(report::command::parse)))
      ->capture_default_str();
  sub->add_option("--conf-prefix", args->conf_prefix,
                  "Directory relative include paths resolve against (default: the main "
                  "file's directory; for stdin, the current directory)");
  sub->callback([&run, args] { run = [args] { return run_parse(*args); }; });
}

}  // namespace ngxtls::cli
