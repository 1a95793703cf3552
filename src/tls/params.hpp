#pragma once
// Facts about ssl_dhparam files and ssl_ecdh_curve lists, answered by the linked libssl.

#include <optional>
#include <string>

#include "tls/errors.hpp"

namespace ngxtls::tls {

/// The prime size in bits of the Diffie-Hellman parameters in the PEM file at `path`
/// ("BEGIN DH PARAMETERS" or "BEGIN X9.42 DH PARAMETERS", as nginx's ngx_ssl_dhparam reads
/// with PEM_read_bio_Parameters), via EVP_PKEY_get_bits.
/// Throws file_error when the file is missing or unreadable, or holds no DH parameters.
int dhparam_bits(const std::string& path);

/// Whether the linked libssl accepts `list` as nginx's `ssl_ecdh_curve` value
/// (SSL_CTX_set1_curves_list on a fresh context, as ngx_ssl_ecdh_curve does; nginx passes
/// "auto" to OpenSSL's defaults without calling it). nullopt when it is accepted, else the
/// names OpenSSL rejected (each tried alone), colon-separated.
std::optional<std::string> rejected_curves(const std::string& list);

}  // namespace ngxtls::tls
