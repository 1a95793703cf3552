#include "serve/web_config.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <semaphore>
#include <thread>

#include "base/error.hpp"
#include "tls/errors.hpp"
#include "tls/file_read.hpp"

namespace ngxtls::serve {

namespace {

namespace fs = std::filesystem;

/// YAML flow collections ([..], {..}) nested deeper than this are refused before yaml-cpp
/// (which recurses per level) reads them; block nesting is bounded by the file size.
constexpr int max_web_config_nesting = 32;

[[noreturn]] void fail(const std::string& file, const YAML::Node& at, const std::string& msg) {
  const auto m = at.Mark();
  throw input_error(
      {file, static_cast<std::uint32_t>(m.line + 1), static_cast<std::uint32_t>(m.column + 1)},
      msg);
}

void check_nesting(const std::string& path, const std::string& text) {
  int depth = 0;
  std::uint32_t line = 1, col = 0;
  char quote = 0;
  for (char c : text) {
    ++col;
    if (c == '\n') ++line, col = 0;
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (c == '[' || c == '{') {
      if (++depth > max_web_config_nesting)
        throw input_error({path, line, col}, "YAML nested deeper than the limit of " +
                                                 std::to_string(max_web_config_nesting) +
                                                 " levels");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

std::string scalar(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(file, n, "\"" + key + "\" must be a string");
  return n.as<std::string>();
}

}  // namespace

web_config load_web_config(const std::string& path) {
  std::string text;
  try {
    text = tls::read_file_bounded(path, max_web_config_bytes);
  } catch (const tls::file_error& e) {
    throw input_error({path, 0, 0}, e.reason());
  }
  check_nesting(path, text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw input_error({path, static_cast<std::uint32_t>(e.mark.line + 1),
                       static_cast<std::uint32_t>(e.mark.column + 1)},
                      "YAML error: " + e.msg);
  }
  web_config w;
  w.path = path;
  if (root.IsNull()) return w;
  if (!root.IsMap()) fail(path, root, "the web configuration must be a mapping");
  const fs::path base = fs::absolute(path).parent_path();
  auto file_name = [&](const YAML::Node& n, const std::string& key) {
    fs::path p = scalar(path, n, key);
    return (p.is_absolute() ? p : base / p).lexically_normal().string();
  };
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "tls_server_config") {
      if (!v.IsMap()) fail(path, v, "tls_server_config must be a mapping");
      for (const auto& t : v) {
        const std::string k = t.first.as<std::string>();
        if (k == "cert_file")
          w.cert_file = file_name(t.second, k);
        else if (k == "key_file")
          w.key_file = file_name(t.second, k);
        else if (k == "min_version") {
          w.min_version = scalar(path, t.second, k);
          if (w.min_version != "TLS12" && w.min_version != "TLS13")
            fail(path, t.second, "min_version must be TLS12 or TLS13");
        } else
          fail(path, t.first,
               "tls_server_config." + k +
                   " is not supported by ngxtls serve (cert_file, key_file, min_version)");
      }
      if (w.cert_file.has_value() != w.key_file.has_value())
        fail(path, v, "tls_server_config needs both cert_file and key_file");
    } else if (key == "basic_auth_users") {
      if (!v.IsMap()) fail(path, v, "basic_auth_users must be a mapping of user: bcrypt hash");
      for (const auto& u : v) {
        const std::string user = u.first.as<std::string>();
        const std::string hash = scalar(path, u.second, user);
        if (!(hash.rfind("$2a$", 0) == 0 || hash.rfind("$2b$", 0) == 0 ||
              hash.rfind("$2y$", 0) == 0) ||
            hash.size() != 60)
          fail(path, u.second, "the password of \"" + user + "\" must be a bcrypt hash ($2y$...)");
        if (user.find(':') != std::string::npos)
          fail(path, u.first, "a user name cannot contain ':'");
        w.basic_auth_users[user] = hash;
      }
    } else {
      fail(
          path, kv.first,
          "\"" + key + "\" is not supported by ngxtls serve (tls_server_config, basic_auth_users)");
    }
  }
  return w;
}

namespace {

// The bcrypt cost ("$2y$10$..." -> 10) of a hash load_web_config accepted.
int bcrypt_cost(const std::string& hash) {
  if (hash.size() < 7 || hash[6] != '$') return 10;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  return cost >= 4 && cost <= 31 ? cost : 10;
}

// bcrypt computations running at once, process-wide: one per core. A storm of wrong passwords
// then takes the cores' time, not every HTTP worker's, and the polling thread that answers
// everything else still gets its share of the CPU.
std::counting_semaphore<64>& bcrypt_slots() {
  static std::counting_semaphore<64> slots(
      std::clamp(static_cast<std::ptrdiff_t>(std::thread::hardware_concurrency()),
                 std::ptrdiff_t{1}, std::ptrdiff_t{64}));
  return slots;
}

// True when `password` hashes to `hash` (bcrypt through crypt_r).
bool bcrypt_matches(const std::string& password, const std::string& hash) {
  bcrypt_slots().acquire();
  struct release {
    ~release() { bcrypt_slots().release(); }
  } released;
  crypt_data data{};
  const char* out = ::crypt_r(password.c_str(), hash.c_str(), &data);
  const bool ok = out != nullptr && out[0] != '*' && hash.size() == std::strlen(out) &&
                  CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(&data, sizeof data);
  return ok;
}

}  // namespace

basic_auth::basic_auth(std::map<std::string, std::string> users) : users_(std::move(users)) {
  if (users_.empty()) return;
  int cost = 4;
  for (const auto& [user, hash] : users_) cost = std::max(cost, bcrypt_cost(hash));
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  crypt_data data{};
  // A random salt (the kernel's randomness: rbytes null): the dummy is nobody's password.
  const char* out =
      ::crypt_gensalt_rn("$2y$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt)
          ? ::crypt_r("ngxtls: no such user", salt, &data)
          : nullptr;
  // Without a dummy (crypt refused the salt) the first user's hash stands in: still one bcrypt
  // of the same cost, and no password given for an unknown user is accepted.
  dummy_hash_ = out && out[0] != '*' ? std::string(out) : users_.begin()->second;
  OPENSSL_cleanse(&data, sizeof data);
}

bool basic_auth::remembered(const std::string& header) {
  std::lock_guard lock(mutex_);
  return verified_.count(header) != 0;
}

bool basic_auth::check(const std::string& header) {
  if (users_.empty()) return true;
  if (header.size() > 1024 || header.rfind("Basic ", 0) != 0) return false;
  {
    std::lock_guard lock(mutex_);
    if (verified_.count(header)) return true;
  }
  const std::string b64 = header.substr(6);
  std::string raw(b64.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()),
                                static_cast<int>(b64.size()));
  if (n < 0) return false;
  int pad = 0;
  for (auto it = b64.rbegin(); it != b64.rend() && *it == '='; ++it) ++pad;
  raw.resize(static_cast<std::size_t>(std::max(0, n - pad)));
  const auto colon = raw.find(':');
  if (colon == std::string::npos) return false;
  const auto user = users_.find(raw.substr(0, colon));
  const std::string password = raw.substr(colon + 1);
  OPENSSL_cleanse(raw.data(), raw.size());
  // An unknown user costs one bcrypt as a known one does (against the dummy hash).
  const bool known = user != users_.end();
  ++hashes_computed_;
  const bool matches = bcrypt_matches(password, known ? user->second : dummy_hash_);
  // crypt_r() reads a C string: bytes after a NUL would be ignored, so "s3cret\0x" would pass
  // for "s3cret". No password with a NUL in it is taken (Prometheus compares every byte).
  const bool ok = known && matches && password.find('\0') == std::string::npos;
  if (ok) {
    std::lock_guard lock(mutex_);
    if (verified_.size() >= 64) verified_.clear();
    verified_.insert(header);
  }
  return ok;
}

}  // namespace ngxtls::serve
