// The metric vocabulary that `serve`'s /probe and `probe --format prometheus` share, against
// real nginx and the real promtool (Debian's prometheus package): both outputs pass `promtool
// check metrics`, they write the same families (the textfile adds a `target` label), the
// certificate chain, TLS version, cipher and OCSP families carry what openssl says of the
// certificates served, and the Grafana dashboard in docs/prometheus/ asks only valid PromQL of
// families the writer emits.
#include <doctest/doctest.h>

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "probe_util.hpp"
#include "report/probe_output.hpp"
#include "serve_util.hpp"

using namespace ngxtls;
using namespace ngxtls::test;

namespace {

bool have(const std::string& tool) {
  return run({"sh", "-c", "command -v " + tool}, "", 10).exit_code == 0;
}

// One nginx speaking TLS 1.2 and 1.3 with a shared session cache, a leaf issued through an
// intermediate (both sent), and a good staple from the first connection.
struct stapling_site {
  temp_dir dir;
  tls::pki_paths pki;
  int port = free_port();
  std::unique_ptr<nginx_instance> ngx;
  stapling_site() {
    tls::pki_options po;
    po.ocsp_url = "http://127.0.0.1:9/";  // never asked: the file is the staple
    pki = tls::make_pki((dir.path() / "pki").string(), po);
    const std::string der = (dir.path() / "staple.der").string();
    tls::write_ocsp_response(pki, der, 86400);
    nginx_options no;
    no.wait_ports = {port};
    ngx = std::make_unique<nginx_instance>(
        nginx_conf(1, tls_server(port, pki,
                                 "ssl_session_cache shared:S:1m;\n  ssl_stapling on;\n  "
                                 "ssl_stapling_file " +
                                     der + ";")),
        no);
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port); }
};

// The site above probed both ways: one scrape of `serve`'s /probe and one `probe --format
// prometheus`, with the exporter still up for /metrics.
struct both_outputs {
  stapling_site site;
  temp_dir dir;
  serve_process srv{dir, "allow = [\"" + site.target() +
                             "\"]\n[modules.default]\nattempts = 3\nsni = \"localhost\"\n"};
  std::string served, textfile;
  both_outputs() {
    auto probe = srv.probe(site.target());
    if (!probe || probe->status != 200) throw std::runtime_error("/probe did not answer 200");
    served = probe->body;
    auto r = run({ngxtls_binary(), "probe", site.target(), "--sni", "localhost", "-n", "3",
                  "--format", "prometheus"},
                 "", 60);
    if (r.exit_code != 0) throw std::runtime_error("ngxtls probe failed: " + r.err);
    textfile = r.out;
  }
};

// `promtool check metrics` of `text`: its exit code and what it printed.
command_result promtool_check_metrics(const std::string& text) {
  return run({"promtool", "check", "metrics"}, text, 60);
}

// One sample line of the text format: family name, labels, value.
struct sample_line {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

// The samples of `text` (comment lines skipped). Label values are unescaped.
std::vector<sample_line> samples_of(const std::string& text) {
  std::vector<sample_line> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line[0] == '#') continue;
    sample_line s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key, value;
        while (line[i] != '=') key += line[i++];
        i += 2;  // ="
        while (line[i] != '"') {
          if (line[i] == '\\') {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        ++i;  // closing quote
        if (line[i] == ',') ++i;
        s.labels[key] = value;
      }
      ++i;  // }
    }
    s.value = line.substr(i + 1);
    out.push_back(std::move(s));
  }
  return out;
}

// The family names of the TYPE lines of `text`.
std::set<std::string> families_of(const std::string& text) {
  std::set<std::string> out;
  std::size_t at = 0;
  while ((at = text.find("# TYPE ", at)) != std::string::npos) {
    at += 7;
    out.insert(text.substr(at, text.find(' ', at) - at));
  }
  return out;
}

// What openssl itself says of a certificate file: `field` of `openssl x509 -noout -FIELD`
// ("serial", "subject", "issuer", "enddate"), the part after the '='.
std::string openssl_field(const std::string& pem, const std::string& field,
                          const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv{"openssl", "x509", "-in", pem, "-noout", "-" + field};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = run(argv, "", 30);
  REQUIRE(r.exit_code == 0);
  std::string v = r.out.substr(r.out.find('=') + 1);
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  while (!v.empty() && v.front() == ' ') v.erase(v.begin());
  return v;
}

// notAfter of a certificate file as seconds since the epoch, through `date`.
long long openssl_not_after(const std::string& pem) {
  auto r = run({"date", "-u", "-d", openssl_field(pem, "enddate"), "+%s"}, "", 30);
  REQUIRE(r.exit_code == 0);
  return std::stoll(r.out);
}

// The metric names a PromQL expression reads: identifiers outside label matchers, strings,
// range brackets and grouping lists that are no function, keyword or number. A small lexer:
// the dashboard's queries are short and written here.
std::set<std::string> metric_names_in(const std::string& expr) {
  static const std::set<std::string> keywords = {
      "by",           "without", "on",     "ignoring", "group_left", "group_right", "bool",
      "and",          "or",      "unless", "offset",   "sum",        "min",         "max",
      "avg",          "count",   "stddev", "stdvar",   "topk",       "bottomk",     "quantile",
      "count_values", "group",   "inf",    "nan"};
  std::set<std::string> out;
  std::size_t i = 0;
  auto skip_to = [&](char close) {
    while (i < expr.size() && expr[i] != close) {
      if (expr[i] == '"') {
        ++i;
        while (i < expr.size() && expr[i] != '"') i += expr[i] == '\\' ? 2 : 1;
      }
      ++i;
    }
    ++i;
  };
  bool grouping_next = false;  // after by / without / on / ignoring / group_*: a label list
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '{') {
      skip_to('}');
    } else if (c == '[') {
      skip_to(']');
    } else if (c == '"') {
      ++i;
      skip_to('"');
    } else if (c == '(' && grouping_next) {
      ++i;
      skip_to(')');
      grouping_next = false;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':') {
      std::string word;
      while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) ||
                                 expr[i] == '_' || expr[i] == ':'))
        word += expr[i++];
      std::size_t j = i;
      while (j < expr.size() && expr[j] == ' ') ++j;
      const bool call = j < expr.size() && expr[j] == '(';
      if (word == "by" || word == "without" || word == "on" || word == "ignoring" ||
          word == "group_left" || word == "group_right") {
        grouping_next = true;
      } else if (!call && !keywords.count(word)) {
        out.insert(word);
      }
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '.'))
        ++i;
    } else {
      ++i;
    }
  }
  return out;
}

// Grafana's variables in a query, replaced by values PromQL accepts.
std::string without_variables(std::string q) {
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"$__rate_interval", "5m"},
                                                        {"$__interval", "1m"},
                                                        {"$__range", "1h"},
                                                        {"${job}", ".*"},
                                                        {"${instance}", ".*"},
                                                        {"$job", ".*"},
                                                        {"$instance", ".*"}}) {
    std::size_t at = 0;
    while ((at = q.find(from, at)) != std::string::npos) {
      q.replace(at, from.size(), to);
      at += to.size();
    }
  }
  return q;
}

// Every panel of the dashboard, rows' nested panels included.
void collect_panels(const nlohmann::json& panels, std::vector<nlohmann::json>& out) {
  for (const auto& p : panels) {
    out.push_back(p);
    if (p.contains("panels")) collect_panels(p.at("panels"), out);
  }
}

}  // namespace

TEST_CASE("promtool check metrics passes on /probe and /metrics and probe --format prometheus") {
  if (!have("promtool")) {
    skip_test("promtool is not installed (Debian package prometheus; scripts/install-deps.sh)");
    return;
  }
  both_outputs o;
  INFO("/probe:\n" << o.served);
  auto served = promtool_check_metrics(o.served);
  CHECK(served.exit_code == 0);
  CHECK(served.out + served.err == "");
  CHECK(sample(o.served, "ngxtls_probe_success") == 1);

  auto own = o.srv.client().Get("/metrics");
  REQUIRE(own);
  auto own_check = promtool_check_metrics(own->body);
  INFO("/metrics:\n" << own->body);
  CHECK(own_check.exit_code == 0);
  CHECK(own_check.out + own_check.err == "");

  INFO("textfile:\n" << o.textfile);
  auto text_check = promtool_check_metrics(o.textfile);
  CHECK(text_check.exit_code == 0);
  CHECK(text_check.out + text_check.err == "");
}

TEST_CASE(
    "the textfile writes the families and series of /probe with a target label and what openssl "
    "says of the chain") {
  both_outputs o;
  const auto& s = o.site;
  INFO("/probe:\n" << o.served << "\ntextfile:\n" << o.textfile);

  // The same families; /probe adds only the age of its cached result.
  auto served_families = families_of(o.served);
  auto text_families = families_of(o.textfile);
  CHECK(served_families.erase("ngxtls_probe_result_age_seconds") == 1);
  CHECK(served_families == text_families);
  // Each is one the writer declares.
  const auto declared = report::probe_metric_families();
  for (const auto& f : text_families) {
    CAPTURE(f);
    CHECK(std::find(declared.begin(), declared.end(), f) != declared.end());
  }

  // The same series once the textfile's target label is set aside; no target label on /probe,
  // and every textfile sample names the target but the build's.
  std::set<std::pair<std::string, std::map<std::string, std::string>>> served_series, text_series;
  for (auto& x : samples_of(o.served)) {
    CHECK(x.labels.count("target") == 0);
    if (x.name != "ngxtls_probe_result_age_seconds") served_series.emplace(x.name, x.labels);
  }
  for (auto x : samples_of(o.textfile)) {
    CAPTURE(x.name);
    if (x.name == "ngxtls_build_info") {
      CHECK(x.labels.count("target") == 0);
    } else {
      CHECK(x.labels["target"] == s.target());
      x.labels.erase("target");
    }
    text_series.emplace(x.name, x.labels);
  }
  CHECK(served_series == text_series);

  // What the writer says of the served chain, against openssl's own reading of the files.
  std::map<std::string, sample_line> by_position;
  for (const auto& x : samples_of(o.served))
    if (x.name == "ngxtls_certificate_not_after_timestamp_seconds")
      by_position[x.labels.at("position")] = x;
  REQUIRE(by_position.size() == 2);  // the leaf and its intermediate, as nginx sends them
  const std::vector<std::string> rfc2253 = {"-nameopt", "RFC2253"};
  for (const auto& [position, cert] :
       {std::pair{std::string("0"), s.pki.leaf_cert}, {"1", s.pki.intermediate_cert}}) {
    CAPTURE(position);
    const auto& x = by_position.at(position);
    CHECK(x.labels.at("serial") == openssl_field(cert, "serial"));
    CHECK(x.labels.at("subject") == openssl_field(cert, "subject", rfc2253));
    CHECK(x.labels.at("issuer") == openssl_field(cert, "issuer", rfc2253));
    CHECK(std::stoll(x.value) == openssl_not_after(cert));
  }
  CHECK(sample(o.served, "ngxtls_certificate_chain_certificates") == 2);
  // TLS versions and ciphers the runs negotiated; the staple is good from the first connection.
  CHECK(sample(o.served, "ngxtls_tls_version_info{version=\"TLSv1.3\"}") == 1);
  CHECK(sample(o.served, "ngxtls_tls_version_info{version=\"TLSv1.2\"}") == 1);
  int tls13_ciphers = 0;
  for (const auto& x : samples_of(o.served))
    if (x.name == "ngxtls_tls_cipher_info" && x.labels.at("version") == "TLSv1.3") {
      ++tls13_ciphers;
      CHECK(x.labels.at("cipher").rfind("TLS_", 0) == 0);  // a TLS 1.3 suite name
    }
  CHECK(tls13_ciphers == 1);
  CHECK(sample(o.served, "ngxtls_ocsp_status{status=\"working\"}") == 1);
  CHECK(sample(o.served, "ngxtls_ocsp_status{status=\"absent\"}") == 0);
  CHECK(sample(o.served, "ngxtls_ocsp_staple_valid{status=\"valid\"}") == 1);
  CHECK(sample(o.served, "ngxtls_ocsp_stapling_working") == 1);
  // Every run is timed, and none of the old names is left.
  for (const char* run : {"protocol=\"TLSv1.3\",mechanism=\"ticket\",mode=\"same_session\"",
                          "protocol=\"TLSv1.2\",mechanism=\"session_id\",mode=\"same_session\""}) {
    CAPTURE(run);
    const double seconds =
        sample(o.served, std::string("ngxtls_probe_run_duration_seconds{") + run + "}");
    CHECK(seconds > 0);
    CHECK(seconds < 30);
    CHECK(sample(o.served, std::string("ngxtls_resumption_ratio{") + run + "}") == 1);
  }
  for (const auto& x : samples_of(o.served)) {
    CAPTURE(x.name);
    CHECK(x.labels.count("quantile") == 0);
    for (const char* old : {"probe_success", "probe_duration_seconds", "ngxtls_probe_up",
                            "ngxtls_probe_certificate_expiry_days", "ngxtls_probe_resumption_rate"})
      CHECK(x.name != old);
  }
  const auto build = samples_of(o.served);
  const auto b = std::find_if(build.begin(), build.end(),
                              [](const sample_line& x) { return x.name == "ngxtls_build_info"; });
  REQUIRE(b != build.end());
  CHECK(b->labels.at("version") == NGXTLS_VERSION);
  CHECK(b->labels.at("openssl_version").rfind("3.", 0) == 0);
}

TEST_CASE("the Grafana dashboard asks valid PromQL of families the writer emits") {
  // The lexer finds names beside functions, matchers, ranges and groupings.
  CHECK(metric_names_in("sum by (instance, le) (rate(a_total{job=~\"x{y}\"}[5m])) / on (job) "
                        "group_left(version) b_info or vector(1) > bool 0.5") ==
        std::set<std::string>{"a_total", "b_info"});

  const auto dashboard = nlohmann::json::parse(
      read_file(source_dir() / "docs" / "prometheus" / "ngxtls-dashboard.json"));
  std::vector<nlohmann::json> panels;
  collect_panels(dashboard.at("panels"), panels);
  const auto declared = report::probe_metric_families();
  const std::set<std::string> families(declared.begin(), declared.end());
  std::set<std::string> named, ids;
  std::string rules = "groups:\n  - name: ngxtls-dashboard\n    rules:\n";
  int queries = 0;
  for (const auto& p : panels) {
    CAPTURE(p.at("title").get<std::string>());
    CHECK(ids.insert(std::to_string(p.at("id").get<int>())).second);
    REQUIRE(p.contains("gridPos"));
    if (p.at("type") == "row") continue;
    REQUIRE(p.contains("targets"));
    CHECK(p.at("datasource").at("uid") == "${datasource}");
    for (const auto& t : p.at("targets")) {
      const std::string expr = without_variables(t.at("expr").get<std::string>());
      CAPTURE(expr);
      const auto names = metric_names_in(expr);
      CHECK_FALSE(names.empty());
      for (const auto& n : names) {
        CAPTURE(n);
        CHECK(families.count(n) == 1);
        named.insert(n);
      }
      // promtool parses each expression as a recording rule's.
      rules += "      - record: dashboard:query_" + std::to_string(++queries) +
               "\n        expr: '" + expr + "'\n";
    }
  }
  CHECK(queries >= 10);
  // Resumption, ticket keys, stapling and expiry each have a panel.
  for (const char* f :
       {"ngxtls_resumption_ratio", "ngxtls_ticket_key_names", "ngxtls_ocsp_stapling_working",
        "ngxtls_ocsp_status", "ngxtls_certificate_not_after_timestamp_seconds"}) {
    CAPTURE(f);
    CHECK(named.count(f) == 1);
  }
  // The variables' queries (label_values(METRIC{...}, LABEL)) name emitted families too.
  for (const auto& v : dashboard.at("templating").at("list")) {
    if (v.at("type") != "query") continue;
    const std::string q = v.at("query").at("query").get<std::string>();
    CAPTURE(q);
    REQUIRE(q.rfind("label_values(", 0) == 0);
    const std::string inner = without_variables(q.substr(13, q.rfind(',') - 13));
    const auto names = metric_names_in(inner);
    REQUIRE(names.size() == 1);
    CHECK(families.count(*names.begin()) == 1);
  }
  if (!have("promtool")) {
    skip_test("promtool is not installed (Debian package prometheus; scripts/install-deps.sh)");
    return;
  }
  temp_dir d;
  const auto path = d.write("dashboard-rules.yml", rules);
  auto check = run({"promtool", "check", "rules", path.string()}, "", 60);
  INFO(rules << check.out << check.err);
  CHECK(check.exit_code == 0);
  CHECK(check.out.find("SUCCESS: " + std::to_string(queries) + " rules found") !=
        std::string::npos);
}

TEST_CASE("docs/prometheus.md names every family the writer can emit") {
  const std::string doc = read_file(source_dir() / "docs" / "prometheus.md");
  for (const auto& f : report::probe_metric_families()) {
    CAPTURE(f);
    CHECK(doc.find("`" + f) != std::string::npos);
  }
}
