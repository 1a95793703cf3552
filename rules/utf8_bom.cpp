// utf8-bom: a file that starts with a UTF-8 byte order mark.

#include "rules/common.hpp"

namespace ngxtls::rules {
namespace {

constexpr const char* id = "utf8-bom";

constexpr const char* doc = R"(# utf8-bom

## What it flags
A configuration file (the main file or any included file) that starts with the UTF-8 byte
order mark, bytes EF BB BF.

## Why it matters
nginx reads bytes and does not strip a BOM: it becomes part of the first directive's name,
and nginx refuses to start with `unknown directive "\xEF\xBB\xBFevents"` (or whatever the
first directive is). Editors on Windows add the mark silently.

## Example
A file saved as "UTF-8 with BOM" whose first line is `events {}`.

## Fix
Save the file without the BOM, e.g. `sed -i '1s/^\xEF\xBB\xBF//' FILE`.

## How the prober confirms it
It cannot: nginx does not start. `nginx -t` prints the unknown directive error.

## Source
case A15 of fixtures/cases (nginx 1.22.1: `unknown directive "\xEF\xBB\xBFevents"`); nginx's tokenizer
(src/core/ngx_conf_file.c, ngx_conf_read_token) has no BOM handling.
)";

void check(const engine::context& ctx, engine::finding_list& out) {
  const auto* cfg = ctx.model().cfg;
  if (!cfg) return;
  for (const auto& file : cfg->files) {
    if (file.content.rfind("\xEF\xBB\xBF", 0) != 0) continue;
    engine::finding f;
    f.rule = id;
    f.level = engine::severity::error;
    f.message =
        "the file starts with a UTF-8 byte order mark: nginx reads it as part of the "
        "first directive's name and refuses to start (unknown directive)";
    f.location = {file.path, 1, 1};
    f.fix = "sed -i '1s/^\\xEF\\xBB\\xBF//' " + file.path;
    f.edits.push_back({file.path, 0, 3, ""});
    out.push_back(std::move(f));
  }
}

}  // namespace

engine::rule utf8_bom() {
  return {id, engine::severity::error, "A file starts with a UTF-8 BOM: nginx will not start", doc,
          check};
}

}  // namespace ngxtls::rules
