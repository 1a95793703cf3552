// ngxtls rules [ID] [--write-docs DIR]: the catalog, one rule's doc, or docs/rules/.

#include <iostream>

#include "base/error.hpp"
#include "base/suggest.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "engine/engine.hpp"
#include "report/rule_docs.hpp"

namespace ngxtls::cli {

void register_rules(CLI::App& app, std::function<int()>& run) {
  auto id = std::make_shared<std::string>();
  auto docs_dir = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("rules", "List the rules, or print one rule's documentation");
  sub->add_option("id", *id, "rule id");
  sub->add_option("--write-docs", *docs_dir,
                  "write one Markdown page per rule and an index into DIR");
  sub->callback([id, docs_dir, &run] {
    run = [id, docs_dir] {
      if (!docs_dir->empty()) {
        try {
          report::write_rule_docs(*docs_dir, [](const std::string& path, const std::string& text) {
            write_output(path, text);
          });
        } catch (const std::exception& e) {  // filesystem_error, or "cannot write FILE"
          throw usage_error("--write-docs: cannot write the rule pages into " + *docs_dir + ": " +
                            e.what());
        }
        std::cout << "wrote " << engine::all_rules().size() << " rule pages to " << *docs_dir
                  << '\n';
        return static_cast<int>(exit_ok);
      }
      if (id->empty()) {
        for (const auto& r : engine::all_rules())
          std::cout << r.id << "  (" << engine::to_string(r.level) << ")  " << r.summary << '\n';
        return static_cast<int>(exit_ok);
      }
      const auto* r = engine::find_rule(*id);
      if (!r)
        throw usage_error("unknown rule \"" + *id + "\"" +
                          did_you_mean(*id, ids_of(engine::all_rules())) + " (see `ngxtls rules`)");
      std::cout << r->doc;
      return static_cast<int>(exit_ok);
    };
  });
}

}  // namespace ngxtls::cli
