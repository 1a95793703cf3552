#include "tls/params.hpp"

#include <openssl/pem.h>

#include <cerrno>
#include <cstdio>

#include "tls/file_read.hpp"
#include "tls/openssl_ptr.hpp"

namespace ngxtls::tls {

int dhparam_bits(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file_bounded(path);  // a FIFO or device named by ssl_dhparam must not block
  } catch (const file_error& e) {
    if (e.not_a_file()) throw;
    throw file_error(path, e.errno_value() == ENOENT ? "no such file" : "cannot be opened",
                     e.errno_value());
  }
  bio_ptr bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
  if (!bio) throw openssl_error("BIO_new_mem_buf");
  evp_pkey_ptr params(PEM_read_bio_Parameters(bio.get(), nullptr));
  ERR_clear_error();
  if (!params || (EVP_PKEY_get_base_id(params.get()) != EVP_PKEY_DH &&
                  EVP_PKEY_get_base_id(params.get()) != EVP_PKEY_DHX))
    throw file_error(path, "no DH parameters found");
  return EVP_PKEY_get_bits(params.get());
}

std::optional<std::string> rejected_curves(const std::string& list) {
  ssl_ctx_ptr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) throw openssl_error("SSL_CTX_new");
  if (SSL_CTX_set1_curves_list(ctx.get(), list.c_str()) == 1) return std::nullopt;
  ERR_clear_error();
  std::string bad;
  std::size_t start = 0;
  while (start <= list.size()) {
    auto colon = list.find(':', start);
    std::string name =
        list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!name.empty() && SSL_CTX_set1_curves_list(ctx.get(), name.c_str()) != 1)
      bad += (bad.empty() ? "" : ":") + name;
    ERR_clear_error();
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return bad.empty() ? std::optional<std::string>(list) : std::optional<std::string>(bad);
}

}  // namespace ngxtls::tls
