#pragma once
// docs/rules/: one Markdown page per rule, generated from the rule's own doc text
// (CONVENTIONS, Rules), plus an index.

#include <functional>
#include <string>

#include "engine/engine.hpp"

namespace ngxtls::report {

/// The page docs/rules/<id>.md for `r`: the rule's doc verbatim, then a footer with the
/// default severity and a "generated, do not edit" line naming the command that writes it.
std::string rule_page(const engine::rule& r);

/// docs/rules/README.md: a table of every rule (id linked to its page, severity, summary).
std::string rules_index();

/// Writes rule_page for every rule and rules_index into `dir` (created if needed), each file
/// through `write_file(path, text)` (the CLI's writer: a temporary file renamed over the path,
/// so a symlink planted at a page's name is replaced, not written through). Throws
/// std::filesystem::filesystem_error when `dir` cannot be made, and what `write_file` throws.
void write_rule_docs(const std::string& dir,
                     const std::function<void(const std::string&, const std::string&)>& write_file);

}  // namespace ngxtls::report
