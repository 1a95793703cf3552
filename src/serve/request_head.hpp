#pragma once
// The exporter's strict reading of an HTTP/1.1 request head (request line and header fields,
// RFC 9112), made on the raw bytes before libmicrohttpd sees them: libmicrohttpd 0.9.75 accepts
// shapes a stricter server refuses (obs-fold, empty field names, NUL in values) and answers some
// malformed requests itself with a broken reply. Also the end of an answer libmicrohttpd writes,
// so that the front knows when the next request of a connection may follow.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ngxtls::serve {

/// The largest request head (request line and header fields) read: a request line that does
/// not end within it is answered 414, header fields that do not 431.
inline constexpr std::size_t max_request_head_bytes = 32 * 1024;

/// Header fields a request may carry (Prometheus sends about five): more is a 431.
inline constexpr int max_header_fields = 100;

/// Query parameters a request may carry (counted as `&` separators; /probe takes at most six):
/// more is a 414.
inline constexpr long max_query_parameters = 64;

/// What the front does with the bytes a client sent so far.
struct head_verdict {
  enum class kind {
    incomplete,  ///< no end of the head yet: read more
    accept,      ///< a well-formed head of `length` bytes: hand it on
    refuse,      ///< answer `status` with `reason` and close the connection
  };
  kind what = kind::incomplete;
  std::size_t length = 0;    ///< accept: bytes of the head, its closing empty line included
  bool head_method = false;  ///< accept: a HEAD request (its answer has no body)
  /// accept: the head to hand on when it is not the `length` bytes received: the same head
  /// without its `Expect` fields (no request has a body to wait for, and libmicrohttpd would
  /// send an interim 100 Continue before the answer)
  std::optional<std::string> rewritten;
  int status = 0;      ///< refuse: 400, 413, 414, 431 or 505
  std::string reason;  ///< refuse: one line for the answer's body
};

/// Reads `buffered`, the bytes received after the previous request's head (leading empty
/// lines already dropped). A head ends at the first empty line (CRLF CRLF) and is accepted
/// only when: every line ends in CRLF (no bare LF or CR); the request line is
/// `token SP target SP HTTP/1.x` with a target of visible ASCII and fewer than
/// max_query_parameters `&`; every field line is `token ":" value` with a non-empty token
/// name and a value of HTAB, SP, visible ASCII and obs-text only (no NUL or other control
/// byte), no line starts with SP or HTAB (obs-fold); at most max_header_fields fields; exactly
/// one Host (HTTP/1.1; at most one in HTTP/1.0), at most one Authorization; Content-Length at
/// most once, of digits only; no Transfer-Encoding and no Content-Length but 0 (no endpoint
/// takes a body: 413). A head that has not ended within max_request_head_bytes is refused
/// (414 without a whole request line, else 431). `scanned` (may be null) keeps how far earlier
/// calls on the same growing buffer looked for the end, so that a client dripping a byte at a
/// time costs one pass over its bytes, not one per byte.
head_verdict check_request_head(std::string_view buffered, std::size_t* scanned = nullptr);

/// Follows one answer libmicrohttpd writes, to find where it ends: its status line and header
/// fields, then `Content-Length` bytes (none for HEAD, 1xx, 204, 304). An interim 1xx answer is
/// passed through and the final one after it followed.
class answer_tracker {
 public:
  /// Starts following the answer to a request (`head_method`: a HEAD request).
  void start(bool head_method);
  /// Takes the next `bytes` of the answer; returns how many of them belong to it (all of them
  /// until it ends). Once done() the rest belongs to no answer.
  std::size_t feed(std::string_view bytes);
  /// True when the whole answer has been seen.
  bool done() const { return state_ == state::done; }
  /// True when the answer's length is not known (no Content-Length): it ends when the
  /// connection does.
  bool until_close() const { return state_ == state::until_close; }

 private:
  enum class state { head, body, until_close, done };
  void end_of_head();
  state state_ = state::done;
  bool head_method_ = false;
  std::string head_;
  std::uint64_t body_left_ = 0;
};

}  // namespace ngxtls::serve
