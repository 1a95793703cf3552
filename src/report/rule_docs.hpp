#pragma once
// docs/rules/: one Markdown page per rule, generated from the rule's own doc text
// (CONVENTIONS, Rules), plus an index.

#include <string>

#include "engine/engine.hpp"

namespace ngxtls::report {

/// The page docs/rules/<id>.md for `r`: the rule's doc verbatim, then a footer with the
/// default severity and a "generated, do not edit" line naming the command that writes it.
std::string rule_page(const engine::rule& r);

/// docs/rules/README.md: a table of every rule (id linked to its page, severity, summary).
std::string rules_index();

/// Writes rule_page for every rule and rules_index into `dir` (created if needed).
/// Throws std::filesystem::filesystem_error or std::runtime_error when a file cannot be written.
void write_rule_docs(const std::string& dir);

}  // namespace ngxtls::report
