#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "base/error.hpp"
#include "base/suggest.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "report/terminal_text.hpp"

namespace {

std::string safe(const char* text) {
  return ngxtls::report::terminal_safe(text);
}
std::string safe(const std::string& text) {
  return ngxtls::report::terminal_safe(text);
}

// "did you mean --format?" for the first word of the command line that looks like a flag and
// names no option of its subcommand (CLI11 says only that it was not expected).
std::string unknown_flag_hint(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return {};
  CLI::App* sub = nullptr;
  for (auto* s : app.get_subcommands([](CLI::App*) { return true; }))
    if (s->check_name(argv[1])) sub = s;
  if (sub == nullptr) return {};
  std::vector<std::string> names;
  for (const CLI::Option* o : sub->get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  for (int i = 2; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") break;
    if (word.size() < 2 || word[0] != '-') continue;
    word = word.substr(0, word.find('='));
    if (std::find(names.begin(), names.end(), word) != names.end()) continue;
    if (auto near = ngxtls::nearest_word(word, names))
      return "unknown option " + word + " of " + sub->get_name() + ": did you mean " + *near + "?";
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`ngxtls lint ... | head`) must not end the run with
  // an exit status that reads as a result: with SIGPIPE ignored the write fails with EPIPE,
  // and that is an error (exit 2, `cannot write to stdout: Broken pipe`) like a full disk.
  // The prober and the sandbox ignore SIGPIPE anyway (peer resets), so this is also the one
  // behaviour every command has.
  ::signal(SIGPIPE, SIG_IGN);
  ngxtls::cli::install_stdout_buffer();
  CLI::App app{"ngxtls: audit and probe nginx TLS configuration"};
  app.set_version_flag("--version", std::string("ngxtls ") + NGXTLS_VERSION);
  app.require_subcommand(1);
  std::function<int()> run;
  ngxtls::cli::register_lint(app, run);
  ngxtls::cli::register_parse(app, run);
  ngxtls::cli::register_probe(app, run);
  ngxtls::cli::register_rules(app, run);
  ngxtls::cli::register_harden(app, run);
  ngxtls::cli::register_check(app, run);
  ngxtls::cli::register_serve(app, run);
  ngxtls::cli::register_completion(app, run);
  // CLI11 says only "A subcommand is required" for `ngxtls frobnicate`: name the word.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    std::vector<std::string> list;
    for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->check_name(argv[1]);
      names += (names.empty() ? "" : ", ") + sub->get_name();
      list.push_back(sub->get_name());
    }
    if (!known) {
      std::cerr << "ngxtls: error: unknown command \"" << ngxtls::report::terminal_safe(argv[1])
                << "\"" << safe(ngxtls::did_you_mean(argv[1], list)) << " (commands: " << names
                << ")\n";
      return ngxtls::cli::exit_input;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's messages quote the offending argument (`--format: x not in {...}`): escape what a
    // terminal would act on. Help and version text go to stdout as written.
    std::ostringstream err;
    int rc = app.exit(e, std::cout, err);
    std::cerr << ngxtls::report::terminal_safe(err.str(), true);
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr)
      if (const std::string hint = unknown_flag_hint(app, argc, argv); !hint.empty())
        std::cerr << "ngxtls: " << safe(hint) << '\n';
    return rc == 0 ? 0 : ngxtls::cli::exit_input;
  }
  try {
    const int rc = run ? run() : ngxtls::cli::exit_input;
    // Commands that print to std::cout directly: a lost report is not a success.
    ngxtls::cli::finish_stdout();
    return rc;
  } catch (const ngxtls::input_error& e) {
    // Messages quote the config's bytes (`unknown directive "..."`): escape what a terminal
    // would act on.
    // What nginx would report first (it reads directives in order) comes first.
    for (const auto& r : e.related_places())
      if (r.first)
        std::cerr << "ngxtls: error: " << safe(ngxtls::to_string(r.where) + ": " + r.message)
                  << '\n';
    std::cerr << "ngxtls: error: " << safe(e.what()) << '\n';
    for (const auto& f : e.include_chain())
      std::cerr << "  included from " << safe(ngxtls::to_string(f)) << '\n';
    for (const auto& r : e.related_places())
      if (!r.first)
        std::cerr << "  note: " << safe(ngxtls::to_string(r.where) + ": " + r.message) << '\n';
    return ngxtls::cli::exit_input;
  } catch (const ngxtls::usage_error& e) {
    std::cerr << "ngxtls: error: " << safe(e.what()) << '\n';
    return ngxtls::cli::exit_input;
  } catch (const ngxtls::target_error& e) {
    std::cerr << "ngxtls: error: " << safe(e.what()) << '\n';
    return ngxtls::cli::exit_target;
  } catch (const std::exception& e) {
    std::cerr << "ngxtls: internal error: " << e.what() << '\n';
    return ngxtls::cli::exit_input;
  }
}
