#include "sandbox/run_material.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "tls/ticket_key.hpp"

namespace fs = std::filesystem;

namespace ngxtls::sandbox {

namespace {

// Files a copied file argument may be at most.
constexpr std::uintmax_t k_max_material_bytes = 64u << 20;

}  // namespace

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

void run_material::start(const std::string& run_dir, bool copies) {
  run_dir_ = run_dir;
  copies_ = copies;
  nginx_root_ = copies ? "/proc/self/cwd" : run_dir;
}

std::string run_material::next_file(const std::string& stem, const std::string& extension) {
  return run_dir_ + "/material/" + stem + "-" + std::to_string(++files_made_) + extension;
}

std::string run_material::file_for_nginx(const std::string& real, const std::string& configured) {
  if (!copies_) return real;
  if (auto it = copy_of_.find(real); it != copy_of_.end()) return it->second;
  std::error_code ec;
  const auto size = fs::file_size(real, ec);
  if (ec || size > k_max_material_bytes) return "";
  const std::string copy = next_file("file", "");
  int in = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (in < 0) return "";
  int out = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = out >= 0;
  std::uintmax_t total = 0;
  char buf[65536];
  for (ssize_t n; ok && (n = ::read(in, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    total += static_cast<std::uintmax_t>(std::max<ssize_t>(n, 0));
    ok = n > 0 && total <= k_max_material_bytes &&
         ::write(out, buf, static_cast<std::size_t>(n)) == n;
  }
  ::close(in);
  if (out >= 0) ::close(out);
  if (!ok) {
    fs::remove(copy, ec);
    return "";
  }
  copy_of_[real] = copy;
  path_shown_as_[copy] = configured;
  return copy;
}

run_material::ticket_key_file run_material::ticket_key_standin(const std::string& real,
                                                               const std::string& configured) {
  if (auto it = ticket_keys_.find(real); it != ticket_keys_.end()) return {it->second, 0, false};
  ticket_key_file out;
  struct stat st {};
  if (::stat(real.c_str(), &st) == 0 && (st.st_size == 48 || st.st_size == 80))
    out.size_bytes = static_cast<std::size_t>(st.st_size);
  out.path = next_file("ticket", ".key");
  out.made_now = true;
  tls::write_ticket_key_file(out.path, out.size_bytes);
  ticket_keys_[real] = out.path;
  path_shown_as_[out.path] = configured;
  return out;
}

const tls::pki_paths* run_material::stand_in_pki(const std::string& key) const {
  auto it = pki_of_.find(key);
  return it == pki_of_.end() ? nullptr : &it->second;
}

const tls::pki_paths& run_material::make_stand_in_pki(const std::string& key,
                                                      const tls::pki_options& options,
                                                      bool leaf_only) {
  auto pki = tls::make_pki(next_file("pki", ""), options);
  if (leaf_only) pki.chain = pki.leaf_cert;
  return pki_of_.insert_or_assign(key, pki).first->second;
}

std::string run_material::ca_bundle(const tls::pki_paths& pki, const std::string& configured) {
  const std::string bundle = next_file("ca", ".pem");
  {
    std::ofstream out(bundle, std::ios::binary);
    std::ifstream a(pki.issuer, std::ios::binary), b(pki.root_cert, std::ios::binary);
    out << a.rdbuf();
    if (pki.root_cert != pki.issuer && !pki.root_cert.empty()) out << b.rdbuf();
  }
  path_shown_as_[bundle] = configured;
  return bundle;
}

void run_material::show_as(const std::string& path, const std::string& configured) {
  path_shown_as_[path] = configured;
}

void run_material::show_address_as(const std::string& address, const std::string& socket) {
  address_shown_as_[address] = socket;
}

std::string run_material::in_configured_terms(std::string message) const {
  for (const auto& [path, text] : path_shown_as_) message = replace_all(message, path, text);
  for (const auto& [addr, text] : address_shown_as_) message = replace_all(message, addr, text);
  return replace_all(message, run_dir_, "<sandbox>");
}

std::string run_material::path_for_nginx(const std::string& path) const {
  if (!copies_ || path.compare(0, run_dir_.size(), run_dir_) != 0) return path;
  return nginx_root_ + path.substr(run_dir_.size());
}

std::string run_material::paths_from_nginx(std::string text) const {
  return copies_ ? replace_all(std::move(text), nginx_root_ + "/", run_dir_ + "/") : text;
}

std::string run_material::config_for_nginx(const std::string& text) const {
  return copies_ ? replace_all(text, run_dir_ + "/", nginx_root_ + "/") : text;
}

}  // namespace ngxtls::sandbox
