// The nginx test fixture itself: start, deterministic reload, and no process left behind.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>

#include "support/nginx_instance.hpp"
#include "support/process.hpp"

using namespace ngxtls::test;

TEST_CASE(
    "nginx_instance starts, reloads to a new worker generation, and leaves no process behind") {
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  pid_t master = -1;
  std::vector<pid_t> all;
  {
    nginx_instance ngx(
        nginx_conf(2, "server { listen 127.0.0.1:" + std::to_string(port) + "; return 200; }"), no);
    master = ngx.master_pid();
    auto first = ngx.worker_pids();
    CHECK(first.size() == 2);
    CHECK(port_accepts(port));
    ngx.reload();
    auto second = ngx.worker_pids();
    CHECK(second.size() == 2);
    for (pid_t p : first) CHECK(std::find(second.begin(), second.end(), p) == second.end());
    all = first;
    all.insert(all.end(), second.begin(), second.end());
    CHECK(ngx.master_pid() == master);
    CHECK_THROWS(ngx.reload("this is not a config"));
    CHECK(ngx.running());
  }
  CHECK(::kill(master, 0) != 0);
  for (pid_t p : all) CHECK(::kill(p, 0) != 0);
  CHECK_FALSE(port_accepts(port));
}

TEST_CASE("two nginx masters can share one port with reuseport") {
  int port = free_port();
  nginx_options no;
  no.wait_ports = {port};
  std::string conf = nginx_conf(
      1, "server { listen 127.0.0.1:" + std::to_string(port) + " reuseport; return 200; }");
  nginx_instance a(conf, no);
  nginx_instance b(conf, no);
  CHECK(a.master_pid() != b.master_pid());
  CHECK(a.worker_pids().size() == 1);
  CHECK(b.worker_pids().size() == 1);
}
