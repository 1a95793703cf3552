#include "engine/file_facts.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <set>
#include <thread>

#include "tls/params.hpp"

namespace ngxtls::engine {

template <class T>
struct file_facts::cache {
  struct slot {
    std::once_flag once;
    lookup<T> value;
  };
  std::mutex mu;  ///< guards `slots` only, never held while a file is read
  std::map<std::string, std::unique_ptr<slot>> slots;

  // The lookup of `key`, filled by fill(key, lookup) on first use (fill may also throw; the
  // error is kept then). Entries are never erased, so a reference stays valid; a second caller
  // of the same key waits for the first.
  template <class F>
  const lookup<T>& fill(const std::string& key, F fill) {
    slot* s = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mu);
      auto& p = slots[key];
      if (!p) p = std::make_unique<slot>();
      s = p.get();
    }
    std::call_once(s->once, [&] {
      try {
        fill(key, s->value);
      } catch (const tls::file_error& e) {
        s->value.missing = e.missing();
        s->value.error = e.reason();
      } catch (const std::exception& e) {
        s->value.error = e.what();
      }
    });
    return s->value;
  }
  // The lookup of `key`, made by read(key) on first use.
  template <class F>
  const lookup<T>& get(const std::string& key, F read) {
    return fill(key, [&](const std::string& k, lookup<T>& out) { out.facts = read(k); });
  }
};

file_facts::file_facts()
    : x509s_(std::make_unique<cache<std::vector<tls::x509_ptr>>>()),
      certs_(std::make_unique<cache<std::vector<tls::certificate_info>>>()),
      private_keys_(std::make_unique<cache<tls::private_key_file>>()),
      ticket_keys_(std::make_unique<cache<tls::ticket_key_info>>()),
      dhparams_(std::make_unique<cache<int>>()),
      key_matches_(std::make_unique<cache<std::optional<std::string>>>()) {}

file_facts::~file_facts() = default;

namespace {

// Copies why `from` failed into `to`: a lookup that rests on another fails as it did. A config
// naming thousands of certificate files this machine lacks fails each of them this way,
// without an exception per lookup.
template <class T, class U>
void fail_like(lookup<T>& to, const lookup<U>& from) {
  to.missing = from.missing;
  to.error = from.error;
}

// False, with `out` failed as tls::read_file_bounded fails (the errno's text; missing for
// ENOENT), when `path` cannot be stat()ed: the common case of a config linted without its
// secrets, told apart without throwing.
template <class T>
void fail_unstatable(lookup<T>& out, int stat_errno) {
  out.missing = stat_errno == ENOENT;
  out.error = std::strerror(stat_errno);
}

template <class T>
bool can_stat(const std::string& path, lookup<T>& out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return true;
  fail_unstatable(out, errno);
  return false;
}

}  // namespace

const lookup<std::vector<tls::x509_ptr>>& file_facts::x509s(const std::string& path) {
  return x509s_->fill(path, [](const std::string& p, lookup<std::vector<tls::x509_ptr>>& out) {
    if (can_stat(p, out)) out.facts = tls::read_certificates(p);
  });
}

const lookup<tls::private_key_file>& file_facts::private_key(const std::string& path) {
  return private_keys_->fill(path, [](const std::string& p, lookup<tls::private_key_file>& out) {
    if (can_stat(p, out)) out.facts = tls::read_private_key(p);
  });
}

void file_facts::learn_unstatable(const std::string& path, int stat_errno) {
  x509s_->fill(path, [&](const std::string&, lookup<std::vector<tls::x509_ptr>>& out) {
    fail_unstatable(out, stat_errno);
  });
  private_keys_->fill(path, [&](const std::string&, lookup<tls::private_key_file>& out) {
    fail_unstatable(out, stat_errno);
  });
}

const lookup<std::vector<tls::certificate_info>>& file_facts::certificate(const std::string& path) {
  return certs_->fill(
      path, [this](const std::string& p, lookup<std::vector<tls::certificate_info>>& out) {
        const auto& read = x509s(p);
        if (read.facts)
          out.facts = tls::inspect_certificates(*read.facts);
        else
          fail_like(out, read);
      });
}

const lookup<tls::ticket_key_info>& file_facts::ticket_key(const std::string& path) {
  return ticket_keys_->get(path,
                           [](const std::string& p) { return tls::inspect_ticket_key_file(p); });
}

const lookup<int>& file_facts::dhparam(const std::string& path) {
  return dhparams_->get(path, [](const std::string& p) { return tls::dhparam_bits(p); });
}

const lookup<std::optional<std::string>>& file_facts::key_match(const std::string& cert,
                                                                const std::string& key) {
  // The cache key joins both paths; a NUL cannot occur in a path.
  return key_matches_->fill(cert + std::string(1, '\0') + key,
                            [&](const std::string&, lookup<std::optional<std::string>>& out) {
                              const auto& c = x509s(cert);
                              if (!c.facts) return fail_like(out, c);
                              const auto& k = private_key(key);
                              if (!k.facts) return fail_like(out, k);
                              out.facts =
                                  tls::key_matches_certificate(c.facts->front().get(), *k.facts);
                            });
}

std::optional<bool> file_facts::issuer_available(const std::string& chain,
                                                 const std::vector<std::string>& cas) {
  std::string key = chain;
  for (const auto& c : cas) key += '\n' + c;
  {
    const std::lock_guard<std::mutex> lock(issuers_mu_);
    if (auto it = issuers_.find(key); it != issuers_.end()) return it->second;
  }
  std::optional<bool> r;
  const auto& leaf = x509s(chain);
  if (leaf.facts) {
    std::vector<const std::vector<tls::x509_ptr>*> read;
    for (const auto& c : cas)
      if (const auto& l = x509s(c); l.facts) read.push_back(&*l.facts);  // unreadable: skipped
    try {
      r = tls::issuer_available(*leaf.facts, read);
    } catch (const std::exception&) {
    }
  }
  const std::lock_guard<std::mutex> lock(issuers_mu_);
  issuers_.emplace(key, r);
  return r;
}

void file_facts::prefetch(const std::vector<std::string>& certificates,
                          const std::vector<std::string>& keys, unsigned threads) {
  // Distinct paths; a path named as both kinds is read as each (nginx reads it twice too).
  std::vector<std::pair<bool, std::string>> todo;
  {
    std::set<std::pair<bool, std::string>> seen;
    for (const auto& p : certificates)
      if (seen.emplace(true, p).second) todo.emplace_back(true, p);
    for (const auto& p : keys)
      if (seen.emplace(false, p).second) todo.emplace_back(false, p);
  }
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < todo.size();) {
      if (todo[i].first)
        certificate(todo[i].second);
      else
        private_key(todo[i].second);
    }
  };
  threads = static_cast<unsigned>(
      std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(todo.size(), 1)));
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
}

}  // namespace ngxtls::engine
