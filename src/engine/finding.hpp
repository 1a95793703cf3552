#pragma once
// What a rule reports.

#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace ngxtls::engine {

/// Finding severities, highest first. `never` is only a --fail-on threshold.
enum class severity { error = 0, warning = 1, note = 2 };
/// "error", "warning", "note".
std::string to_string(severity s);
/// Parses "error" / "warning" / "note"; nullopt otherwise.
std::optional<severity> parse_severity(const std::string& s);

/// The probe question whose answer confirms or refutes a finding (`ngxtls check`). A rule
/// declares one (engine::rule::confirmed_by); a rule whose findings need different judges sets
/// the question per finding (finding::question). src/check holds the judge of each.
enum class probe_question {
  none,                   ///< nothing on the wire or from nginx -t answers it
  nginx_t_verdict,        ///< nginx -t rejects the directive the finding is at
  nginx_t_warns_at_line,  ///< nginx -t warns (deprecated) at the finding's line
  tls13_resumes,          ///< do TLS 1.3 tickets arrive, and resume?
  tls12_resumes,          ///< does TLS 1.2 resume at all, by ticket or by session ID?
  key_domains,            ///< how many ticket key names, at what resumption rate?
  saved_session_resumes,  ///< does a session saved before a deploy or reload still resume?
  staple_present,         ///< does an OCSP staple arrive over the retries?
  staple_valid,           ///< is each staple valid for the chain that carried it?
  tls13_handshake,        ///< does a TLS 1.3 handshake complete?
  protocols_per_name,     ///< which protocols does the server accept under this name?
  session_id_resumption,  ///< does a TLS 1.2 session ID resume every time?
  session_crosses_names,  ///< does a session taken under one name resume under another?
  settings_per_name,      ///< do tickets under this name carry this server's key and lifetime,
                          ///< and do its session IDs resume?
  handshake_under_name,   ///< does a TLS handshake complete under a server written without ssl
                          ///< (or nginx -t warn that the socket's options were redefined)?
  socket_options_warned,  ///< does nginx -t warn that the socket's options were redefined?
  hsts_header_served,     ///< does the server's response carry Strict-Transport-Security?
  early_data_replayed,    ///< is a replayed 0-RTT first flight accepted and answered (not 425)?
  closes_without_close_notify,  ///< does the server end connections without close_notify, and
                                ///< do clients that read to EOF then resume less?
  upstream_connections,         ///< does each request through the location open a TLS connection
                                ///< to the (stand-in) upstream?
  upstream_resumption,          ///< are nginx's new upstream TLS connections resumed?
  upstream_sni,                 ///< does nginx send SNI to the upstream?
  upstream_verification,        ///< does nginx complete requests to an upstream whose certificate
                                ///< is for another name?
  quic_tokens_kept,             ///< is a QUIC NEW_TOKEN token taken again by another instance, or
                                ///< after a reload, without a Retry?
  quic_early_data,              ///< is 0-RTT over QUIC accepted, and a replay answered?
};
/// "none", "nginx_t_verdict", ... (the enumerator's name).
std::string to_string(probe_question q);
/// One sentence for the rule docs (no final period): what `ngxtls check` measures to answer `q`.
std::string describe(probe_question q);

/// One config fact a finding rests on: a directive's effective value and where it came from.
struct evidence {
  std::string name;    ///< directive or fact name, e.g. "ssl_session_cache"
  std::string value;   ///< effective value as nginx would read it, e.g. "none"
  std::string origin;  ///< "server", "http", "stream", "default", "file", "listen", ...
  std::optional<source_location> where;  ///< null for nginx defaults and measured facts
};

/// A byte-range replacement in one config file, for `lint --fix`: replace `length` bytes at
/// `offset` of the file's content (as read, config::source_file::content) with `replacement`.
struct text_edit {
  std::string file;        ///< path as in source_location::file
  std::size_t offset = 0;  ///< byte offset into the file
  std::size_t length = 0;  ///< bytes replaced (0 = insert)
  std::string replacement;
  /// Offset of the directive whose block the replacement's directives belong in (the directive
  /// replaced, or the one inserted after); apply_fixes re-parses the result and refuses an
  /// edit whose directives land in another block. npos: not checked.
  std::size_t anchor = static_cast<std::size_t>(-1);
};

/// One finding.
struct finding {
  std::string rule;
  severity level = severity::warning;
  std::string message;       ///< one sentence: what is wrong and its effect
  source_location location;  ///< the causing directive
  std::vector<source_location>
      include_chain;             ///< include directives that led there, outermost first
  std::vector<evidence> facts;   ///< effective values behind the finding
  std::string fix;               ///< a config snippet that fixes it
  std::string server;            ///< "name (socket)" for context; may be empty
  std::vector<text_edit> edits;  ///< a mechanical fix, when the rule has one (lint --fix)
  std::vector<int> ports;        ///< ports of the listen sockets it concerns (check matches
                                 ///< probe evidence by these); empty = not socket-bound
  /// The probe question that confirms this finding when it is not its rule's
  /// (rule::confirmed_by): set by rules whose findings need different judges.
  std::optional<probe_question> question;
  /// Further places where this finding holds, after `location`: the directives a summary
  /// finding covers, or identical findings merged for the report (report::merge_identical).
  /// Empty for most findings.
  std::vector<source_location> also_at;
};

/// The most findings one rule keeps in one run (unused-suppression notes count as a rule):
/// a config of millions of unknown directives must not hold millions of findings (a 30 MB
/// one took 8.6 GB). Past it the rule's findings are counted, not kept.
inline constexpr std::size_t max_findings_per_rule = 10000;
/// The most findings one run reports in all (kept in rule catalog order).
inline constexpr std::size_t max_findings = 100000;

/// Where a rule puts its findings: keeps the first `cap` and counts the rest.
class finding_list {
 public:
  explicit finding_list(std::size_t cap = max_findings_per_rule) : cap_(cap) {}
  /// Keeps `f` unless the cap is reached; then counts it as dropped.
  void push_back(finding f) {
    if (kept_.size() < cap_) {
      kept_.push_back(std::move(f));
    } else {
      ++dropped_;
    }
  }
  bool empty() const { return kept_.empty(); }
  std::size_t size() const { return kept_.size(); }
  auto begin() { return kept_.begin(); }
  auto end() { return kept_.end(); }
  auto begin() const { return kept_.begin(); }
  auto end() const { return kept_.end(); }
  const finding& operator[](std::size_t i) const { return kept_[i]; }
  /// The findings kept.
  std::vector<finding>& kept() { return kept_; }
  /// Findings past the cap, counted and not kept.
  std::size_t dropped() const { return dropped_; }
  /// Counts `n` findings that were never made: a rule whose shared input was capped
  /// already (rules/directive_check.hpp).
  void count_dropped(std::size_t n) { dropped_ += n; }

 private:
  std::size_t cap_;
  std::vector<finding> kept_;
  std::size_t dropped_ = 0;
};

}  // namespace ngxtls::engine
