#pragma once
// Typed errors shared by every layer. Only src/cli turns them into messages and exit codes.

#include <compare>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ngxtls {

/// A place in a configuration file: path as given or resolved, 1-based line and column (bytes).
/// line == 0 means "the whole file" (e.g. it could not be opened).
struct source_location {
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  /// The same file, line and column.
  bool operator==(const source_location&) const = default;
  /// Ordered by file, then line, then column (the order of a report).
  auto operator<=>(const source_location&) const = default;
  /// The same file and line, whatever the column: nginx's messages name a line, not a column.
  bool same_line(const source_location& other) const {
    return file == other.file && line == other.line;
  }
};

/// "file:line:col" (or "file:line", or "file" when line/column are 0).
std::string to_string(const source_location& where);

/// Bad input: a syntax error, an unreadable or missing file, an include cycle, a limit hit.
/// `message` is in nginx's own words where nginx has them (e.g. `unexpected "}"`);
/// `include_chain` lists the include directives that led to `where`, outermost first.
/// The CLI maps it to exit code 2.
class input_error : public std::runtime_error {
 public:
  input_error(source_location where, std::string message,
              std::vector<source_location> include_chain = {});
  const source_location& where() const noexcept { return where_; }
  const std::string& message() const noexcept { return message_; }
  const std::vector<source_location>& include_chain() const noexcept { return chain_; }

  /// A place related to the error: what nginx would report before it (`first`: an earlier
  /// line nginx stops at), or where the block an end of file left open was opened.
  struct related {
    source_location where;
    std::string message;
    bool first = false;  ///< reported before the error itself (nginx stops there first)
  };
  /// The related places, in the order they were added.
  const std::vector<related>& related_places() const noexcept { return related_; }
  /// Adds a related place (see related).
  void add_related(related r) { related_.push_back(std::move(r)); }

 private:
  source_location where_;
  std::string message_;
  std::vector<source_location> chain_;
  std::vector<related> related_;
};

/// Wrong command-line use or option values that the CLI parser cannot catch (exit code 2).
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A probe target could not be reached or spoke no TLS (exit code 3).
class target_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ngxtls
