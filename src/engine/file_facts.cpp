#include "engine/file_facts.hpp"

#include "tls/params.hpp"

namespace ngxtls::engine {

namespace {
template <class T, class F>
const lookup<T>& cached(std::mutex& mu, std::map<std::string, lookup<T>>& cache,
                        const std::string& path, F read) {
  // Rules run on several threads; entries are never erased, so a reference stays valid.
  const std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  lookup<T> l;
  try {
    l.facts = read(path);
  } catch (const tls::file_error& e) {
    l.missing = e.missing();
    l.error = e.reason();
  } catch (const std::exception& e) {
    l.error = e.what();
  }
  return cache.emplace(path, std::move(l)).first->second;
}
}  // namespace

const lookup<std::vector<tls::certificate_info>>& file_facts::certificate(const std::string& path) {
  return cached(mu_, certs_, path,
                [](const std::string& p) { return tls::read_certificate_chain(p); });
}

const lookup<tls::ticket_key_info>& file_facts::ticket_key(const std::string& path) {
  return cached(mu_, keys_, path,
                [](const std::string& p) { return tls::inspect_ticket_key_file(p); });
}

const lookup<int>& file_facts::dhparam(const std::string& path) {
  return cached(mu_, dhparams_, path, [](const std::string& p) { return tls::dhparam_bits(p); });
}

const lookup<std::optional<std::string>>& file_facts::key_match(const std::string& cert,
                                                                const std::string& key) {
  // The cache key joins both paths; a NUL cannot occur in a path.
  return cached(mu_, key_matches_, cert + std::string(1, '\0') + key,
                [&](const std::string&) { return tls::key_matches_certificate(cert, key); });
}

std::optional<bool> file_facts::issuer_available(const std::string& chain,
                                                 const std::vector<std::string>& cas) {
  std::string key = chain;
  for (const auto& c : cas) key += '\n' + c;
  const std::lock_guard<std::mutex> lock(mu_);
  if (auto it = issuers_.find(key); it != issuers_.end()) return it->second;
  std::optional<bool> r;
  try {
    r = tls::issuer_available(chain, cas);
  } catch (const std::exception&) {
  }
  issuers_.emplace(key, r);
  return r;
}

}  // namespace ngxtls::engine
