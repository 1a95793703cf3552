#include <cstdio>
#include <iostream>

#include "base/error.hpp"
#include "cli/commands.hpp"

int main(int argc, char** argv) {
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : ngxtls::cli::exit_input;
  }
  try {
    return run ? run() : ngxtls::cli::exit_input;
  } catch (const ngxtls::input_error& e) {
    std::cerr << "ngxtls: error: " << e.what() << '\n';
    for (const auto& f : e.include_chain()) std::cerr << "  included from " << ngxtls::to_string(f) << '\n';
    return ngxtls::cli::exit_input;
  } catch (const ngxtls::usage_error& e) {
    std::cerr << "ngxtls: error: " << e.what() << '\n';
    return ngxtls::cli::exit_input;
  } catch (const ngxtls::target_error& e) {
    std::cerr << "ngxtls: error: " << e.what() << '\n';
    return ngxtls::cli::exit_target;
  } catch (const std::exception& e) {
    std::cerr << "ngxtls: internal error: " << e.what() << '\n';
    return ngxtls::cli::exit_input;
  }
}
