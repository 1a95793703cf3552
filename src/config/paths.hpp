#pragma once
// File names in a configuration, resolved against nginx's conf prefix: the one definition the
// loader (includes), the engine (ssl_* files) and the sandbox use.

#include <string>
#include <string_view>

namespace ngxtls::config {

/// `name` as nginx opens it (ngx_conf_full_name(), src/core/ngx_conf_file.c): an absolute name
/// stays, a relative one is joined to `prefix` (the conf prefix); an empty or "." prefix leaves it
/// relative to the current directory. Not normalized, as in nginx: an include glob such as
/// "a/*/../b.conf" keeps its meaning.
std::string full_name(std::string_view prefix, std::string_view name);

/// full_name(), lexically normalized ("a/./b" and "a/x/../b" become "a/b"), so that two
/// spellings of one file compare equal: the form a file path takes in findings and as a lookup
/// key. It names another file than nginx opens only where a ".." follows a symbolic link.
std::string resolve_file(std::string_view prefix, std::string_view name);

}  // namespace ngxtls::config
