#include "probe/quic_connection.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace ngxtls::probe {

namespace {

using quic_clock = std::chrono::steady_clock;

// TLS 1.3 only, QUIC's AEADs, no middlebox compatibility mode (RFC 9001 8.4).
constexpr const char* quic_priority =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
    "+AES-128-CCM:%DISABLE_TLS13_COMPAT_MODE";

// HTTP/3 codes (RFC 9114): H3_NO_ERROR closes the connection after a request.
constexpr std::uint64_t h3_no_error = 0x100;
// The response bytes kept from the request stream (its HEADERS frame is all that is read).
constexpr std::size_t max_response_stream_bytes = 16384;
// The bytes of all datagrams one connection reads before it gives up on the server.
constexpr std::size_t max_connection_bytes = 4 * 1024 * 1024;

ngtcp2_tstamp ngtcp2_now() {
  return static_cast<ngtcp2_tstamp>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(quic_clock::now().time_since_epoch())
          .count());
}

double ms_since(quic_clock::time_point a, quic_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

// A QUIC variable-length integer (RFC 9000 16).
void put_varint(std::string& out, std::uint64_t v) {
  if (v < 64) {
    out += static_cast<char>(v);
  } else if (v < 16384) {
    out += static_cast<char>(0x40 | (v >> 8));
    out += static_cast<char>(v & 0xff);
  } else {
    for (int shift = 24; shift >= 0; shift -= 8)
      out += static_cast<char>((shift == 24 ? 0x80 : 0) | ((v >> shift) & 0xff));
  }
}

// Reads a QUIC varint at `pos`; false when `in` ends first.
bool get_varint(const std::string& in, std::size_t& pos, std::uint64_t& v) {
  if (pos >= in.size()) return false;
  auto first = static_cast<unsigned char>(in[pos]);
  std::size_t len = std::size_t{1} << (first >> 6);
  if (pos + len > in.size()) return false;
  v = first & 0x3f;
  for (std::size_t i = 1; i < len; ++i) v = (v << 8) | static_cast<unsigned char>(in[pos + i]);
  pos += len;
  return true;
}

// A QPACK prefixed integer (RFC 7541 5.1) with `prefix_bits`, `flags` in the first byte's
// other bits.
void put_prefixed(std::string& out, unsigned flags, int prefix_bits, std::size_t v) {
  std::size_t max = (std::size_t{1} << prefix_bits) - 1;
  if (v < max) {
    out += static_cast<char>(flags | v);
    return;
  }
  out += static_cast<char>(flags | max);
  v -= max;
  while (v >= 128) {
    out += static_cast<char>(0x80 | (v & 0x7f));
    v >>= 7;
  }
  out += static_cast<char>(v);
}

bool get_prefixed(const std::string& in, std::size_t& pos, int prefix_bits, std::size_t& v) {
  if (pos >= in.size()) return false;
  std::size_t max = (std::size_t{1} << prefix_bits) - 1;
  v = static_cast<unsigned char>(in[pos++]) & max;
  if (v < max) return true;
  for (int shift = 0; shift < 28; shift += 7) {
    if (pos >= in.size()) return false;
    auto b = static_cast<unsigned char>(in[pos++]);
    v += static_cast<std::size_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// `HEAD /` as one HTTP/3 HEADERS frame: QPACK with the static table only (no dynamic table, so
// the server needs none of our encoder stream).
std::string h3_head_request(const std::string& authority) {
  std::string fields;
  fields += '\0';                     // required insert count 0
  fields += '\0';                     // base 0
  put_prefixed(fields, 0xc0, 6, 18);  // :method HEAD
  put_prefixed(fields, 0xc0, 6, 23);  // :scheme https
  put_prefixed(fields, 0xc0, 6, 1);   // :path /
  put_prefixed(fields, 0x50, 4, 0);   // :authority, literal value
  put_prefixed(fields, 0x00, 7, authority.size());
  fields += authority;
  std::string frame;
  put_varint(frame, 0x01);  // HEADERS
  put_varint(frame, fields.size());
  return frame + fields;
}

// The client's control stream: its type and an empty SETTINGS frame.
std::string h3_control_stream() {
  return std::string("\x00\x04\x00", 3);
}

// The :status of a QPACK field section whose first line is the status (as servers send it):
// an indexed static entry or a literal with a static :status name; null when it is neither.
std::optional<int> qpack_status(const std::string& block) {
  static const std::pair<std::size_t, int> statuses[] = {
      {24, 103}, {25, 200}, {26, 304}, {27, 404}, {28, 503}, {63, 100}, {64, 204},
      {65, 206}, {66, 302}, {67, 400}, {68, 403}, {69, 421}, {70, 425}, {71, 500}};
  std::size_t pos = 0, v = 0;
  if (!get_prefixed(block, pos, 8, v) || !get_prefixed(block, pos, 7, v)) return std::nullopt;
  if (pos >= block.size()) return std::nullopt;
  auto b = static_cast<unsigned char>(block[pos]);
  if ((b & 0xc0) == 0xc0) {  // indexed, static
    if (!get_prefixed(block, pos, 6, v)) return std::nullopt;
    for (auto [index, status] : statuses)
      if (index == v) return status;
    return std::nullopt;
  }
  if ((b & 0xf0) != 0x50) return std::nullopt;  // literal with a static name reference
  if (!get_prefixed(block, pos, 4, v) || !(v == 24 || (v >= 25 && v <= 28) || (v >= 63 && v <= 71)))
    return std::nullopt;
  if (pos >= block.size() || (static_cast<unsigned char>(block[pos]) & 0x80) != 0)
    return std::nullopt;  // Huffman-coded value: not decoded here
  std::size_t len = 0;
  if (!get_prefixed(block, pos, 7, len) || len != 3 || pos + 3 > block.size()) return std::nullopt;
  int status = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    char c = block[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    status = status * 10 + (c - '0');
  }
  return status;
}

// The TLS 1.3 NewSessionTicket body (RFC 8446 4.6.1); null when it does not parse.
std::optional<quic_ticket> parse_new_session_ticket(const unsigned char* p, std::size_t n) {
  auto u16 = [&](std::size_t at) { return static_cast<std::size_t>(p[at] << 8 | p[at + 1]); };
  if (n < 9) return std::nullopt;
  quic_ticket t;
  t.lifetime_hint_s = static_cast<std::uint32_t>(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3];
  std::size_t pos = 8 + 1 + p[8];  // lifetime, age_add, nonce
  if (pos + 2 > n) return std::nullopt;
  std::size_t ticket_len = u16(pos);
  pos += 2;
  if (ticket_len == 0 || pos + ticket_len + 2 > n) return std::nullopt;
  t.size_bytes = ticket_len;
  t.key_name = hex(p + pos, std::min<std::size_t>(16, ticket_len));
  pos += ticket_len;
  std::size_t ext_end = pos + 2 + u16(pos);
  pos += 2;
  if (ext_end > n) return std::nullopt;
  while (pos + 4 <= ext_end) {
    std::size_t type = u16(pos), len = u16(pos + 2);
    pos += 4;
    if (pos + len > ext_end) return std::nullopt;
    if (type == 42 && len == 4)  // early_data
      t.max_early_data = static_cast<std::uint32_t>(p[pos]) << 24 | p[pos + 1] << 16 |
                         p[pos + 2] << 8 | p[pos + 3];
    pos += len;
  }
  return t;
}

std::string transport_error_name(std::uint64_t code) {
  if (code >= 0x100 && code <= 0x1ff) {
    const char* alert =
        gnutls_alert_get_strname(static_cast<gnutls_alert_description_t>(code - 0x100));
    return std::string("CRYPTO_ERROR ") + (alert ? alert : "alert");
  }
  static const char* names[] = {"NO_ERROR",
                                "INTERNAL_ERROR",
                                "CONNECTION_REFUSED",
                                "FLOW_CONTROL_ERROR",
                                "STREAM_LIMIT_ERROR",
                                "STREAM_STATE_ERROR",
                                "FINAL_SIZE_ERROR",
                                "FRAME_ENCODING_ERROR",
                                "TRANSPORT_PARAMETER_ERROR",
                                "CONNECTION_ID_LIMIT_ERROR",
                                "PROTOCOL_VIOLATION",
                                "INVALID_TOKEN",
                                "APPLICATION_ERROR",
                                "CRYPTO_BUFFER_EXCEEDED",
                                "KEY_UPDATE_ERROR",
                                "AEAD_LIMIT_REACHED",
                                "NO_VIABLE_PATH"};
  return code < std::size(names) ? names[code] : "transport error";
}

// One stream the client writes: its bytes and how far they went.
struct out_stream {
  std::int64_t id = -1;
  std::string bytes;
  std::size_t offset = 0;
  bool fin = false;   // close the stream after the bytes (the request; not the control stream)
  bool done = false;  // every byte (and the FIN) handed to ngtcp2
};

// Everything one connection owns; the callbacks reach it through user_data.
struct quic_state {
  const quic_connection_options* o = nullptr;
  quic_connection_result res;
  int fd = -1;
  sockaddr_storage local{}, remote{};
  socklen_t local_len = 0, remote_len = 0;
  gnutls_certificate_credentials_t cred = nullptr;
  gnutls_session_t tls = nullptr;
  ngtcp2_conn* conn = nullptr;
  ngtcp2_crypto_conn_ref ref{};
  std::vector<out_stream> streams;
  std::int64_t request_stream = -1;
  bool request_queued = false, early_sent = false, response_seen = false;
  std::string response;  // request stream bytes, at most max_response_stream_bytes
  std::optional<std::string> callback_error;
  quic_clock::time_point started, deadline, request_at;
  // The last thing the probe waits for after the handshake: the handshake itself, a ticket, a
  // NEW_TOKEN, response bytes. Not every datagram: nginx keeps probing the path MTU.
  quic_clock::time_point last_data;

  ~quic_state() {
    if (conn) ngtcp2_conn_del(conn);
    if (tls) gnutls_deinit(tls);
    if (cred) gnutls_certificate_free_credentials(cred);
    if (fd >= 0) ::close(fd);
  }
};

quic_state* state_of(gnutls_session_t s) {
  auto* ref = static_cast<ngtcp2_crypto_conn_ref*>(gnutls_session_get_ptr(s));
  return static_cast<quic_state*>(ref->user_data);
}

ngtcp2_conn* conn_of(ngtcp2_crypto_conn_ref* ref) {
  return static_cast<quic_state*>(ref->user_data)->conn;
}

// The server's NewSessionTicket: before GnuTLS parses it (HOOK_PRE, the whole message body:
// GnuTLS 3.7 hands HOOK_POST only the part its parser left, the extensions), the ticket's
// fields; after it (HOOK_POST), the session data that now holds this ticket.
int on_new_session_ticket(gnutls_session_t s, unsigned, unsigned when, unsigned incoming,
                          const gnutls_datum_t* msg) {
  quic_state* st = state_of(s);
  if (!incoming || msg == nullptr) return 0;
  if (when == GNUTLS_HOOK_PRE) {
    if (st->res.tickets.size() >= st->o->max_tickets) {
      st->callback_error = "the server sent more than " + std::to_string(st->o->max_tickets) +
                           " session tickets on one QUIC connection";
      return GNUTLS_E_INTERNAL_ERROR;
    }
    auto t = parse_new_session_ticket(msg->data, msg->size);
    if (!t) {
      st->callback_error = "malformed NewSessionTicket from the server";
      return GNUTLS_E_INTERNAL_ERROR;
    }
    st->res.tickets.push_back(*t);
    st->last_data = quic_clock::now();
    return 0;
  }
  gnutls_datum_t data{};
  if (st->res.tickets.empty() || gnutls_session_get_data2(s, &data) != 0) return 0;
  quic_session session;
  session.tls_data.assign(data.data, data.data + data.size);
  session.max_early_data = st->res.tickets.back().max_early_data;
  st->res.session = std::move(session);
  gnutls_free(data.data);
  return 0;
}

void rand_cb(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) {
  (void)gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

int new_cid_cb(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t len, void*) {
  if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, len) != 0 ||
      gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  cid->datalen = len;
  return 0;
}

int recv_retry_cb(ngtcp2_conn* conn, const ngtcp2_pkt_hd* hd, void* user) {
  static_cast<quic_state*>(user)->res.retry_received = true;
  return ngtcp2_crypto_recv_retry_cb(conn, hd, user);
}

int recv_new_token_cb(ngtcp2_conn*, const ngtcp2_vec* token, void* user) {
  auto* st = static_cast<quic_state*>(user);
  st->res.new_token.assign(token->base, token->base + std::min<std::size_t>(token->len, 4096));
  st->last_data = quic_clock::now();
  return 0;
}

int handshake_completed_cb(ngtcp2_conn*, void* user) {
  auto* st = static_cast<quic_state*>(user);
  st->last_data = quic_clock::now();
  st->res.handshake_ms = ms_since(st->started, st->last_data);
  return 0;
}

// Keeps the first HEADERS frame's field section of the request stream and its :status.
void read_response(quic_state& st, const uint8_t* data, size_t len) {
  if (st.response_seen) return;
  std::size_t room =
      max_response_stream_bytes - std::min(st.response.size(), max_response_stream_bytes);
  st.response.append(reinterpret_cast<const char*>(data), std::min(len, room));
  std::size_t pos = 0;
  std::uint64_t type = 0, flen = 0;
  while (get_varint(st.response, pos, type) && get_varint(st.response, pos, flen)) {
    if (pos + flen > st.response.size()) return;
    if (type == 0x01) {
      st.res.http_status = qpack_status(st.response.substr(pos, flen));
      st.res.first_byte_ms = ms_since(st.request_at, quic_clock::now());
      st.response_seen = true;
      return;
    }
    pos += flen;
  }
}

int recv_stream_data_cb(ngtcp2_conn* conn, uint32_t, int64_t stream_id, uint64_t,
                        const uint8_t* data, size_t len, void* user, void*) {
  auto* st = static_cast<quic_state*>(user);
  if (stream_id == st->request_stream) {
    read_response(*st, data, len);
    st->last_data = quic_clock::now();
  }
  ngtcp2_conn_extend_max_stream_offset(conn, stream_id, len);
  ngtcp2_conn_extend_max_offset(conn, len);
  return 0;
}

ngtcp2_callbacks client_callbacks() {
  ngtcp2_callbacks cb{};
  cb.client_initial = ngtcp2_crypto_client_initial_cb;
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.recv_retry = recv_retry_cb;
  cb.rand = rand_cb;
  cb.get_new_connection_id = new_cid_cb;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.handshake_completed = handshake_completed_cb;
  cb.recv_new_token = recv_new_token_cb;
  cb.recv_stream_data = recv_stream_data_cb;
  return cb;
}

std::optional<std::string> open_socket(quic_state& st, const sockaddr_storage& addr,
                                       socklen_t addr_len) {
  st.fd = ::socket(addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (st.fd < 0) return std::string("cannot create a UDP socket: ") + std::strerror(errno);
  std::memcpy(&st.remote, &addr, addr_len);
  st.remote_len = addr_len;
  if (::connect(st.fd, reinterpret_cast<const sockaddr*>(&addr), addr_len) != 0)
    return std::string("UDP connect failed: ") + std::strerror(errno);
  st.local_len = sizeof st.local;
  if (::getsockname(st.fd, reinterpret_cast<sockaddr*>(&st.local), &st.local_len) != 0)
    return std::string("getsockname failed: ") + std::strerror(errno);
  return std::nullopt;
}

std::optional<std::string> setup_tls(quic_state& st) {
  const auto& o = *st.o;
  auto fail = [](const char* what, int rv) {
    return std::string(what) + " failed: " + gnutls_strerror(rv);
  };
  int rv = gnutls_certificate_allocate_credentials(&st.cred);
  if (rv != 0) return fail("gnutls_certificate_allocate_credentials", rv);
  rv = gnutls_init(&st.tls, GNUTLS_CLIENT | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA);
  if (rv != 0) return fail("gnutls_init", rv);
  if ((rv = gnutls_priority_set_direct(st.tls, quic_priority, nullptr)) != 0)
    return fail("gnutls_priority_set_direct", rv);
  if (ngtcp2_crypto_gnutls_configure_client_session(st.tls) != 0)
    return std::string("ngtcp2_crypto_gnutls_configure_client_session failed");
  st.ref.get_conn = conn_of;
  st.ref.user_data = &st;
  gnutls_session_set_ptr(st.tls, &st.ref);
  if ((rv = gnutls_credentials_set(st.tls, GNUTLS_CRD_CERTIFICATE, st.cred)) != 0)
    return fail("gnutls_credentials_set", rv);
  static unsigned char h3[] = {'h', '3'};
  gnutls_datum_t alpn{h3, sizeof h3};
  gnutls_alpn_set_protocols(st.tls, &alpn, 1, GNUTLS_ALPN_MANDATORY);
  if (!o.sni.empty()) gnutls_server_name_set(st.tls, GNUTLS_NAME_DNS, o.sni.data(), o.sni.size());
  gnutls_handshake_set_hook_function(st.tls, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_BOTH,
                                     on_new_session_ticket);
  if (o.offer && !o.offer->tls_data.empty() &&
      (rv = gnutls_session_set_data(st.tls, o.offer->tls_data.data(), o.offer->tls_data.size())) !=
          0)
    return fail("gnutls_session_set_data", rv);
  return std::nullopt;
}

std::optional<std::string> setup_quic(quic_state& st) {
  const auto& o = *st.o;
  ngtcp2_path path{{reinterpret_cast<sockaddr*>(&st.local), st.local_len},
                   {reinterpret_cast<sockaddr*>(&st.remote), st.remote_len},
                   nullptr};
  ngtcp2_cid dcid{}, scid{};
  dcid.datalen = NGTCP2_MIN_INITIAL_DCIDLEN;
  scid.datalen = 8;
  if (gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen) != 0 ||
      gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen) != 0)
    return std::string("gnutls_rnd failed");
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = ngtcp2_now();
  settings.handshake_timeout = static_cast<ngtcp2_duration>(o.timeout_ms) * NGTCP2_MILLISECONDS;
  if (!o.token.empty()) {
    settings.token.base = const_cast<uint8_t*>(o.token.data());
    settings.token.len = o.token.size();
  }
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_streams_uni = 3;
  params.initial_max_stream_data_bidi_local = 256 * 1024;
  params.initial_max_stream_data_uni = 256 * 1024;
  params.initial_max_data = 1024 * 1024;
  params.max_idle_timeout = static_cast<ngtcp2_duration>(o.timeout_ms) * NGTCP2_MILLISECONDS;
  ngtcp2_callbacks cb = client_callbacks();
  int rv = ngtcp2_conn_client_new(&st.conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb,
                                  &settings, &params, nullptr, &st);
  if (rv != 0) return std::string("ngtcp2_conn_client_new failed: ") + ngtcp2_strerror(rv);
  ngtcp2_conn_set_tls_native_handle(st.conn, st.tls);
  return std::nullopt;
}

// Opens the control and request streams and queues `HEAD /` (as 0-RTT before the handshake).
void queue_request(quic_state& st) {
  st.request_queued = true;
  out_stream control, request;
  if (ngtcp2_conn_open_uni_stream(st.conn, &control.id, nullptr) == 0) {
    control.bytes = h3_control_stream();
    st.streams.push_back(control);
  }
  if (ngtcp2_conn_open_bidi_stream(st.conn, &request.id, nullptr) != 0) return;
  request.bytes = h3_head_request(st.o->authority);
  request.fin = true;
  st.request_stream = request.id;
  st.request_at = quic_clock::now();
  st.streams.push_back(request);
}

bool send_datagram(quic_state& st, const uint8_t* p, std::size_t n) {
  ssize_t w = ::send(st.fd, p, n, 0);
  if (w >= 0 || errno == EAGAIN || errno == EWOULDBLOCK) return true;  // QUIC recovers losses
  st.res.error = errno == ECONNREFUSED
                     ? "nothing listens on UDP " + std::string("(ICMP port unreachable)")
                     : std::string("UDP send failed: ") + std::strerror(errno);
  return false;
}

// Writes every queued stream byte and every packet ngtcp2 has; false on a fatal error.
bool flush(quic_state& st) {
  uint8_t buf[1500];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi{};
  for (auto& s : st.streams) {
    // Bounded: each pass either moves stream bytes or sends a packet ngtcp2 had to send first.
    for (int pass = 0; pass < 64 && !s.done; ++pass) {
      ngtcp2_vec v{reinterpret_cast<uint8_t*>(s.bytes.data()) + s.offset,
                   s.bytes.size() - s.offset};
      ngtcp2_ssize accepted = -1;
      uint32_t flags = s.fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : NGTCP2_WRITE_STREAM_FLAG_NONE;
      auto n = ngtcp2_conn_writev_stream(st.conn, &ps.path, &pi, buf, sizeof buf, &accepted, flags,
                                         s.id, &v, 1, ngtcp2_now());
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED || n == NGTCP2_ERR_STREAM_SHUT_WR ||
          n == NGTCP2_ERR_STREAM_NOT_FOUND)
        break;
      if (n < 0) {
        st.res.error = std::string("QUIC write failed: ") + ngtcp2_strerror(static_cast<int>(n));
        return false;
      }
      if (accepted >= 0) {
        s.offset += static_cast<std::size_t>(accepted);
        s.done = s.offset == s.bytes.size();
      }
      if (n == 0) break;
      if (!send_datagram(st, buf, static_cast<std::size_t>(n))) return false;
    }
  }
  for (;;) {
    auto n = ngtcp2_conn_write_pkt(st.conn, &ps.path, &pi, buf, sizeof buf, ngtcp2_now());
    if (n < 0) {
      st.res.error = std::string("QUIC write failed: ") + ngtcp2_strerror(static_cast<int>(n));
      return false;
    }
    if (n == 0) return true;
    if (!send_datagram(st, buf, static_cast<std::size_t>(n))) return false;
  }
}

std::string close_text(const ngtcp2_connection_close_error& e) {
  char code[32];
  std::snprintf(code, sizeof code, "0x%llx", static_cast<unsigned long long>(e.error_code));
  std::string out = code;
  if (e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT)
    out += " (" + transport_error_name(e.error_code) + ")";
  else
    out += " (application)";
  if (e.reasonlen > 0) {
    std::string reason(reinterpret_cast<const char*>(e.reason),
                       std::min<std::size_t>(e.reasonlen, 200));
    out += ": " + reason;
  }
  return out;
}

// Reads every datagram waiting; false when the connection is over (closed or failed).
bool read_datagrams(quic_state& st) {
  static thread_local uint8_t buf[max_quic_datagram_bytes + 1];
  for (;;) {
    ssize_t n = ::recv(st.fd, buf, sizeof buf, MSG_TRUNC);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
      st.res.error = errno == ECONNREFUSED
                         ? std::string(
                               "nothing listens on that UDP port (ICMP "
                               "port unreachable)")
                         : std::string("UDP receive failed: ") + std::strerror(errno);
      return false;
    }
    st.res.datagrams_received++;
    st.res.bytes_received += static_cast<std::size_t>(n);
    // The bound counts every datagram, the oversize ones too: a flood of them must end here.
    if (st.res.datagrams_received > st.o->max_datagrams ||
        st.res.bytes_received > max_connection_bytes) {
      st.res.error = "the server sent more than " + std::to_string(st.o->max_datagrams) +
                     " datagrams or " + std::to_string(max_connection_bytes) +
                     " bytes on one QUIC connection";
      return false;
    }
    if (static_cast<std::size_t>(n) > max_quic_datagram_bytes) continue;  // truncated: refused
    ngtcp2_path path{{reinterpret_cast<sockaddr*>(&st.local), st.local_len},
                     {reinterpret_cast<sockaddr*>(&st.remote), st.remote_len},
                     nullptr};
    ngtcp2_pkt_info pi{};
    int rv =
        ngtcp2_conn_read_pkt(st.conn, &path, &pi, buf, static_cast<std::size_t>(n), ngtcp2_now());
    if (rv == 0) continue;
    if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING) {
      ngtcp2_connection_close_error e;
      ngtcp2_conn_get_connection_close_error(st.conn, &e);
      st.res.server_close = close_text(e);
      if (!st.res.handshake_ok)
        st.res.error = "the server closed the QUIC connection: " + *st.res.server_close;
      return false;
    }
    if (rv == NGTCP2_ERR_RECV_VERSION_NEGOTIATION) {
      st.res.error = "the server does not speak QUIC v1 (Version Negotiation)";
      return false;
    }
    st.res.error = st.callback_error ? *st.callback_error
                                     : std::string("QUIC packet refused: ") + ngtcp2_strerror(rv);
    return false;
  }
}

// After the handshake: the TLS facts, 0-RTT's fate, and the request when not sent yet.
void on_handshake(quic_state& st) {
  st.res.handshake_ok = true;
  st.res.resumed = gnutls_session_is_resumed(st.tls) != 0;
  const char* cipher = gnutls_cipher_get_name(gnutls_cipher_get(st.tls));
  const char* group = gnutls_group_get_name(gnutls_group_get(st.tls));
  st.res.cipher = cipher ? cipher : "";
  st.res.group = group ? group : "";
  gnutls_datum_t proto{};
  if (gnutls_alpn_get_selected_protocol(st.tls, &proto) == 0)
    st.res.alpn.assign(reinterpret_cast<const char*>(proto.data), proto.size);
  st.res.version =
      ngtcp2_conn_get_negotiated_version(st.conn) == NGTCP2_PROTO_VER_V1 ? "v1" : "other";
  if (st.early_sent) {
    bool accepted = (gnutls_session_get_flags(st.tls) & GNUTLS_SFLAGS_EARLY_DATA) != 0 &&
                    ngtcp2_conn_get_early_data_rejected(st.conn) == 0;
    st.res.early = accepted ? early_data_outcome::accepted : early_data_outcome::rejected;
    if (!accepted) {
      if (ngtcp2_conn_get_early_data_rejected(st.conn) == 0)
        ngtcp2_conn_early_data_rejected(st.conn);
      st.streams.clear();
      st.request_stream = -1;
      st.request_queued = false;
    }
  }
  if (st.o->http && !st.request_queued) queue_request(st);
}

// The connection ends: CONNECTION_CLOSE with no error (H3_NO_ERROR after a request).
void close_connection(quic_state& st) {
  uint8_t buf[1500];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi{};
  ngtcp2_connection_close_error e;
  ngtcp2_connection_close_error_default(&e);
  if (st.request_stream >= 0 || st.response_seen)
    ngtcp2_connection_close_error_set_application_error(&e, h3_no_error, nullptr, 0);
  auto n =
      ngtcp2_conn_write_connection_close(st.conn, &ps.path, &pi, buf, sizeof buf, &e, ngtcp2_now());
  if (n > 0) (void)::send(st.fd, buf, static_cast<std::size_t>(n), 0);
}

// How long nothing new must arrive after the handshake: the option, or two handshake times on
// a slower path (tickets follow the handshake by about one round trip).
quic_clock::duration quiet_time(const quic_state& st) {
  return std::chrono::duration_cast<quic_clock::duration>(std::chrono::duration<double, std::milli>(
      std::max<double>(st.o->quiet_ms, 2 * st.res.handshake_ms)));
}

bool finished_after_handshake(const quic_state& st, quic_clock::time_point now) {
  if (st.o->stop_after_handshake) return !st.o->http || st.response_seen;
  bool quiet = now - st.last_data >= quiet_time(st);
  if (!st.o->http) return quiet;
  return st.response_seen && quiet;
}

std::string timeout_text(const quic_state& st) {
  std::string phase = st.res.handshake_ok ? "reading the HTTP/3 response" : "the QUIC handshake";
  std::string out = phase + " timed out after " + std::to_string(st.o->timeout_ms) + " ms";
  if (!st.res.handshake_ok)
    out += st.res.datagrams_received == 0
               ? " (no datagram from the server)"
               : " (" + std::to_string(st.res.datagrams_received) + " datagrams, " +
                     std::to_string(st.res.bytes_received) +
                     " bytes from the server, no handshake)";
  return out;
}

void event_loop(quic_state& st) {
  for (;;) {
    if (!flush(st)) return;
    auto now = quic_clock::now();
    if (st.res.handshake_ok && finished_after_handshake(st, now)) return close_connection(st);
    if (now >= st.deadline) {
      st.res.error = timeout_text(st);
      return;
    }
    if (st.o->stop != nullptr && st.o->stop->load()) {
      st.res.error = "stopped by Ctrl-C or SIGTERM";
      return;
    }
    auto wake = st.deadline;
    ngtcp2_tstamp expiry = ngtcp2_conn_get_expiry(st.conn), ts = ngtcp2_now();
    if (expiry != UINT64_MAX)
      wake = std::min(wake, now + std::chrono::nanoseconds(expiry > ts ? expiry - ts : 0));
    if (st.res.handshake_ok) wake = std::min(wake, st.last_data + quiet_time(st));
    // At most 100 ms between looks at the stop flag.
    if (st.o->stop != nullptr) wake = std::min(wake, now + std::chrono::milliseconds(100));
    auto wait_ms =
        std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, quic_clock::duration{}));
    pollfd p{st.fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(wait_ms.count()));
    if (r < 0 && errno != EINTR) {
      st.res.error = std::string("poll failed: ") + std::strerror(errno);
      return;
    }
    if (r > 0 && !read_datagrams(st)) return;
    if (!st.res.handshake_ok && ngtcp2_conn_get_handshake_completed(st.conn)) on_handshake(st);
    int rv = ngtcp2_conn_handle_expiry(st.conn, ngtcp2_now());
    if (rv != 0) {
      // The idle timeout equals the connection's deadline: before the handshake, it is the
      // handshake's time-out.
      const bool timed_out = rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT ||
                             (rv == NGTCP2_ERR_IDLE_CLOSE && !st.res.handshake_ok);
      st.res.error = timed_out ? timeout_text(st)
                     : rv == NGTCP2_ERR_IDLE_CLOSE
                         ? "the QUIC connection went idle"
                         : std::string("QUIC timer: ") + ngtcp2_strerror(rv);
      return;
    }
  }
}

}  // namespace

quic_connection_result run_quic_connection(const sockaddr_storage& addr, socklen_t addr_len,
                                           const quic_connection_options& o) {
  quic_state st;
  st.o = &o;
  st.started = st.last_data = quic_clock::now();
  st.deadline = st.started + std::chrono::milliseconds(o.timeout_ms);
  auto err = open_socket(st, addr, addr_len);
  if (!err) err = setup_tls(st);
  if (!err) err = setup_quic(st);
  if (err) {
    st.res.error = *err;
    return std::move(st.res);
  }
  const quic_session* offer = o.offer;
  if (o.early_data && o.http && offer && offer->max_early_data > 0 && offer->transport_params) {
    ngtcp2_conn_set_early_remote_transport_params(
        st.conn, static_cast<const ngtcp2_transport_params*>(offer->transport_params.get()));
    queue_request(st);
    st.early_sent = st.request_stream >= 0;
  }
  event_loop(st);
  if (st.res.handshake_ok && st.res.session) {
    auto params = std::make_shared<ngtcp2_transport_params>(
        *ngtcp2_conn_get_remote_transport_params(st.conn));
    st.res.session->transport_params = std::move(params);
  }
  if (!st.res.error && st.callback_error) st.res.error = st.callback_error;
  return std::move(st.res);
}

}  // namespace ngxtls::probe
