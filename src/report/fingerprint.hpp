#pragma once
// Where a finding is, in words that survive edits: the directive's normalised text and its
// block path, and the fingerprint code scanning tracks an alert by (SARIF
// partialFingerprints), which the findings baseline (--baseline-report) matches.

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/error.hpp"
#include "config/tree.hpp"
#include "engine/finding.hpp"

namespace ngxtls::report {

/// The SARIF `partialFingerprints` key ngxtls writes its place fingerprint under.
inline constexpr const char* fingerprint_key = "ngxtlsPlace/v1";

/// For each directive of a set of configs, its place: the block path within its file (each
/// enclosing block's name and arguments, a `server` named by its `server_name`s) and the
/// directive's name and arguments, separated by single spaces, e.g.
/// `http > server(a.example) > ssl_protocols TLSv1 TLSv1.2`. Line numbers are not part of it,
/// so a place keeps its text while lines move. Filled by one thread; once filled, read by any.
class place_index {
 public:
  /// Marks the line of `loc` as one whose place will be asked for: add() keeps the places of
  /// marked lines only (a place is a string per directive; all of a large config's would
  /// cost more memory than the config itself).
  void want(const source_location& loc);
  /// Indexes the directives on the marked lines of every file of `cfg` (each file's own tree,
  /// not the expanded one, so a file included twice has one place per directive).
  void add(const config::config& cfg);
  /// The place of the directive at `loc`: the directive starting on loc.line at the greatest
  /// column not after loc.column (a finding may point at an argument); "" when no directive
  /// starts on that line (a file-level finding).
  std::string place(const source_location& loc) const;
  /// place(loc) appended to `out`.
  void append_place(const source_location& loc, std::string& out) const;

 private:
  struct entry {
    std::uint32_t column;
    std::string text;
  };
  using file_lines = std::unordered_map<std::uint32_t, std::vector<entry>>;

 public:
  /// Looks places up for one thread, keeping the last file's lines: asked in place order,
  /// most places are in the previous one's file, whose shared path compares without its bytes.
  class cursor {
   public:
    explicit cursor(const place_index& index) : index_(index) {}
    /// place_index::append_place(loc, out).
    void append_place(const source_location& loc, std::string& out);

   private:
    const place_index& index_;
    file_path file_;
    const file_lines* lines_ = nullptr;
    bool looked_ = false;
  };

 private:
  /// file path -> line -> directives starting there, by column.
  std::unordered_map<std::string, file_lines> files_;
  /// file path -> the lines want() marked.
  std::unordered_map<std::string, std::unordered_set<std::uint32_t>> wanted_;
  /// The file the last want() named, and its lines (see cursor).
  file_path last_wanted_file_;
  std::unordered_set<std::uint32_t>* last_wanted_ = nullptr;
  /// The entry among `lines` (one file's) for loc: the directive on its line at the greatest
  /// column not after its column; null when none starts on that line.
  static const entry* best_entry(const file_lines& lines, const source_location& loc);
};

/// The path code scanning knows `file` by: relative to `project_root` with '/' separators
/// when under it, else the absolute path (or `file` unchanged when it cannot be made
/// absolute). An empty `project_root` leaves every path absolute.
std::string project_path(const std::string& file, const std::string& project_root);

/// Fingerprints of every place of every finding (`location`, then each of `also_at`), in
/// that order per finding: the lowercase hex SHA-256 of the rule id, the place's project
/// path and its place_index text, followed by ":N" where N counts the earlier places in
/// `findings` order with the same three (identical directives in one file, e.g. two servers
/// both without a session cache), from 1.
std::vector<std::vector<std::string>> fingerprints(const std::vector<engine::finding>& findings,
                                                   const place_index& places,
                                                   const std::string& project_root);

}  // namespace ngxtls::report
