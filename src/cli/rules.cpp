// ngxtls rules [ID]: the catalog, or one rule's doc.

#include <iostream>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "engine/engine.hpp"

namespace ngxtls::cli {

void register_rules(CLI::App& app, std::function<int()>& run) {
  auto id = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("rules", "List the rules, or print one rule's documentation");
  sub->add_option("id", *id, "rule id");
  sub->callback([id, &run] {
    run = [id] {
      if (id->empty()) {
        for (const auto& r : engine::all_rules())
          std::cout << r.id << "  (" << engine::to_string(r.level) << ")  " << r.summary << '\n';
        return static_cast<int>(exit_ok);
      }
      const auto* r = engine::find_rule(*id);
      if (!r) throw usage_error("unknown rule \"" + *id + "\" (see `ngxtls rules`)");
      std::cout << r->doc;
      return static_cast<int>(exit_ok);
    };
  });
}

}  // namespace ngxtls::cli
