// Placeholder until the parse subcommand lands; replaced by its real implementation.
#include "cli/commands.hpp"

namespace ngxtls::cli {
void register_parse(CLI::App& app, std::function<int()>& run) {
  auto* sub = app.add_subcommand("parse", "(not built yet)");
  sub->callback([&run] { run = [] { return 2; }; });
}
}  // namespace ngxtls::cli
