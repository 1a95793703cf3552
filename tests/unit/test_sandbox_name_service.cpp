// The whole-config `nginx -t` of check --sandbox runs only where host name lookups stay inside
// its loopback-only network namespace.

#include <doctest/doctest.h>

#include "sandbox/sandbox.hpp"

using ngxtls::sandbox::name_service_outside;

TEST_CASE("hosts looked up in files and DNS stay inside the sandbox's network namespace") {
  CHECK(name_service_outside("hosts:          files dns\n") == "");
  CHECK(name_service_outside("passwd: files\nhosts: files myhostname dns # local\n") == "");
  CHECK(name_service_outside("hosts: files [NOTFOUND=return] dns\n") == "");
  CHECK(name_service_outside("hosts: dns [!UNAVAIL=return] files\n") == "");
  // No hosts line: glibc's default (dns, files).
  CHECK(name_service_outside("passwd: files\n") == "");
  CHECK(name_service_outside("") == "");
  // A commented-out line does not count.
  CHECK(name_service_outside("# hosts: files resolve\nhosts: files dns\n") == "");
}

TEST_CASE("hosts looked up through a local daemon could leave the sandbox's network namespace") {
  const auto why =
      name_service_outside("hosts: mymachines resolve [!UNAVAIL=return] files myhostname dns\n");
  CHECK(why.find("\"mymachines\"") != std::string::npos);
  CHECK(name_service_outside("hosts: files resolve [!UNAVAIL=return] dns\n").find("\"resolve\"") !=
        std::string::npos);
  CHECK(name_service_outside("hosts: files mdns4_minimal [NOTFOUND=return] dns\n")
            .find("\"mdns4_minimal\"") != std::string::npos);
  CHECK(name_service_outside("  hosts: files sss dns\n").find("\"sss\"") != std::string::npos);
}
