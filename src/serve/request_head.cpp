#include "serve/request_head.hpp"

#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace ngxtls::serve {

namespace {

// RFC 9110 section 5.6.2: tchar.
bool token_char(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return token_char(static_cast<unsigned char>(c));
  });
}

// RFC 9110 section 5.5: field-content is HTAB, SP, VCHAR and obs-text; every other control
// byte (NUL, CR, LF, DEL, ...) is refused rather than cut at or passed on.
bool field_value_char(unsigned char c) {
  return c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f);
}

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

head_verdict refuse(int status, std::string reason) {
  head_verdict v;
  v.what = head_verdict::kind::refuse;
  v.status = status;
  v.reason = std::move(reason);
  return v;
}

// The request line: method SP request-target SP HTTP-version (RFC 9112 section 3).
head_verdict check_request_line(std::string_view line, bool& http10) {
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return refuse(400, "a malformed request line (expected METHOD SP TARGET SP HTTP/1.1)");
  const auto method = line.substr(0, sp1);
  const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto version = line.substr(sp2 + 1);
  if (!token(method)) return refuse(400, "a request method that is not a token");
  if (target.empty() ||
      !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
    return refuse(400, "a request target with a byte that is not visible ASCII");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9')
    return refuse(400, "a malformed HTTP version");
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return refuse(505, "only HTTP/1.0 and HTTP/1.1 are served");
  http10 = version == "HTTP/1.0";
  const auto query = target.find('?');
  if (query != std::string_view::npos && std::count(target.begin() + static_cast<long>(query),
                                                    target.end(), '&') >= max_query_parameters)
    return refuse(414, "more than " + std::to_string(max_query_parameters) + " query parameters");
  head_verdict ok;
  ok.what = head_verdict::kind::accept;
  ok.head_method = method == "HEAD";
  return ok;
}

}  // namespace

head_verdict check_request_head(std::string_view buffered, std::size_t* scanned) {
  // Find the end of the head, refusing a line that does not end in CRLF on the way.
  std::size_t from = scanned ? *scanned : 0;
  std::size_t end = 0;
  for (std::size_t i = from; i < buffered.size(); ++i) {
    const char c = buffered[i];
    if (c == '\n' && (i == 0 || buffered[i - 1] != '\r'))
      return refuse(400, "a line that ends in a bare LF (lines end in CRLF)");
    if (i > 0 && buffered[i - 1] == '\r' && c != '\n')
      return refuse(400, "a bare CR (lines end in CRLF)");
    if (c == '\n' && i >= 3 && buffered.substr(i - 3, 4) == "\r\n\r\n") {
      end = i + 1;
      break;
    }
    // A CR last in the buffer is judged when the next byte comes.
    from = c == '\r' ? i : i + 1;
  }
  if (scanned) *scanned = from;
  if (end == 0) {
    if (buffered.size() < max_request_head_bytes) return {};
    return buffered.find("\r\n") == std::string_view::npos
               ? refuse(414, "a request line longer than the limit of " +
                                 std::to_string(max_request_head_bytes) + " bytes")
               : refuse(431, "request header fields longer than the limit of " +
                                 std::to_string(max_request_head_bytes) + " bytes");
  }
  if (end > max_request_head_bytes)
    return refuse(431, "request header fields longer than the limit of " +
                           std::to_string(max_request_head_bytes) + " bytes");

  const std::string_view head = buffered.substr(0, end - 2);  // each line ends in CRLF
  auto line_end = head.find("\r\n");
  bool http10 = false;
  head_verdict verdict = check_request_line(head.substr(0, line_end), http10);
  if (verdict.what != head_verdict::kind::accept) return verdict;
  verdict.length = end;

  int fields = 0, hosts = 0, authorizations = 0, content_lengths = 0;
  bool transfer_encoding = false, body = false;
  for (std::size_t at = line_end + 2; at < head.size(); at = line_end + 2) {
    line_end = head.find("\r\n", at);
    const auto line = head.substr(at, line_end - at);
    if (++fields > max_header_fields)
      return refuse(431, "more than " + std::to_string(max_header_fields) + " header fields");
    if (line.front() == ' ' || line.front() == '\t')
      return refuse(400, "a header field line folded onto the next (obs-fold, RFC 9112 5.2)");
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return refuse(400, "a header field line without a colon");
    const auto name = line.substr(0, colon);
    if (name.empty()) return refuse(400, "a header field with an empty name");
    if (!token(name)) return refuse(400, "a header field name that is not a token");
    const auto raw_value = line.substr(colon + 1);
    if (!std::all_of(raw_value.begin(), raw_value.end(),
                     [](char c) { return field_value_char(static_cast<unsigned char>(c)); }))
      return refuse(400, "a header field value with a control byte (NUL, CR, DEL, ...)");
    const auto value = trim_ows(raw_value);
    if (equals_nocase(name, "host")) {
      ++hosts;
    } else if (equals_nocase(name, "authorization")) {
      ++authorizations;
    } else if (equals_nocase(name, "content-length")) {
      ++content_lengths;
      if (value.empty() ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return refuse(400, "a Content-Length that is not a number of digits");
      body = body || value.find_first_not_of('0') != std::string_view::npos;
    } else if (equals_nocase(name, "transfer-encoding")) {
      transfer_encoding = true;
    } else if (equals_nocase(name, "expect")) {
      if (!verdict.rewritten) verdict.rewritten = std::string(buffered.substr(0, at));
      continue;
    }
    if (verdict.rewritten) verdict.rewritten->append(head.substr(at, line_end + 2 - at));
  }
  if (verdict.rewritten) verdict.rewritten->append("\r\n");
  if (hosts > 1) return refuse(400, "more than one Host header field");
  if (hosts == 0 && !http10) return refuse(400, "no Host header field (HTTP/1.1 needs one)");
  if (authorizations > 1) return refuse(400, "more than one Authorization header field");
  if (content_lengths > 1) return refuse(400, "more than one Content-Length");
  if (transfer_encoding && content_lengths > 0)
    return refuse(400, "both Transfer-Encoding and Content-Length");
  if (transfer_encoding || body)
    return refuse(413, "the exporter's endpoints take no request body");
  return verdict;
}

void answer_tracker::start(bool head_method) {
  state_ = state::head;
  head_method_ = head_method;
  head_.clear();
  body_left_ = 0;
}

void answer_tracker::end_of_head() {
  // "HTTP/1.1 NNN ..."
  const int status = head_.size() >= 12 ? std::atoi(head_.c_str() + 9) : 0;
  if (status >= 100 && status < 200) {
    head_.clear();  // an interim answer: the final one follows
    return;
  }
  std::optional<std::uint64_t> length;
  for (std::size_t at = head_.find("\r\n"); at != std::string::npos;
       at = head_.find("\r\n", at + 2)) {
    const std::string_view line = std::string_view(head_).substr(at + 2);
    if (line.size() > 15 && strncasecmp(line.data(), "content-length:", 15) == 0)
      length = std::strtoull(line.data() + 15, nullptr, 10);
  }
  head_.clear();
  if (head_method_ || status == 204 || status == 304) {
    state_ = state::done;
  } else if (length) {
    body_left_ = *length;
    state_ = body_left_ == 0 ? state::done : state::body;
  } else {
    state_ = state::until_close;
  }
}

std::size_t answer_tracker::feed(std::string_view bytes) {
  std::size_t used = 0;
  while (used < bytes.size() && (state_ == state::head || state_ == state::body)) {
    if (state_ == state::head) {
      const char c = bytes[used++];
      head_ += c;
      if (c == '\n' && head_.size() >= 4 && head_.compare(head_.size() - 4, 4, "\r\n\r\n") == 0)
        end_of_head();
    } else {
      const auto n =
          static_cast<std::size_t>(std::min<std::uint64_t>(body_left_, bytes.size() - used));
      used += n;
      body_left_ -= n;
      if (body_left_ == 0) state_ = state::done;
    }
  }
  if (state_ == state::until_close) return bytes.size();
  return used;
}

}  // namespace ngxtls::serve
