// Placeholder until the lint subcommand lands; replaced by its real implementation.
#include "cli/commands.hpp"

namespace ngxtls::cli {
void register_lint(CLI::App& app, std::function<int()>& run) {
  auto* sub = app.add_subcommand("lint", "(not built yet)");
  sub->callback([&run] { run = [] { return 2; }; });
}
}  // namespace ngxtls::cli
