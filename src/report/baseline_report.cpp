#include "report/baseline_report.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "report/fingerprint.hpp"

namespace ngxtls::report {

std::set<std::string> baseline_fingerprints(const std::string& text, const std::string& name) {
  const source_location at{name, 0, 0};
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw input_error(at,
                      "--baseline-report: not a JSON report (SARIF or ngxtls lint --format "
                      "json)");
  std::set<std::string> out;
  std::size_t results = 0;
  auto take = [&](const nlohmann::json& v) {
    if (v.is_string()) out.insert(v.get<std::string>());
  };
  if (doc.contains("runs") && doc["runs"].is_array()) {
    for (const auto& run : doc["runs"]) {
      if (!run.is_object() || !run.contains("results") || !run["results"].is_array()) continue;
      for (const auto& res : run["results"]) {
        ++results;
        if (res.is_object() && res.contains("partialFingerprints") &&
            res["partialFingerprints"].is_object() &&
            res["partialFingerprints"].contains(fingerprint_key))
          take(res["partialFingerprints"][fingerprint_key]);
      }
    }
  } else if (doc.contains("findings") && doc["findings"].is_array()) {
    for (const auto& f : doc["findings"]) {
      ++results;
      if (f.is_object() && f.contains("fingerprints") && f["fingerprints"].is_array())
        for (const auto& fp : f["fingerprints"]) take(fp);
    }
  } else {
    throw input_error(at,
                      "--baseline-report: neither a SARIF log (runs) nor an ngxtls JSON "
                      "report (findings)");
  }
  if (results > 0 && out.empty())
    throw input_error(at, "--baseline-report: " + std::to_string(results) +
                              " results but no ngxtls fingerprint (" + fingerprint_key +
                              "): make the report with this version of ngxtls lint");
  return out;
}

std::set<std::string> read_baseline_report(const std::string& path) {
  const source_location at{path, 0, 0};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw input_error(at, std::string("--baseline-report: ") + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_at_end{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw input_error(at, "--baseline-report: not a regular file");
  if (static_cast<std::size_t>(st.st_size) > max_baseline_report_bytes)
    throw input_error(at, "--baseline-report: larger than " +
                              std::to_string(max_baseline_report_bytes >> 20) + " MiB");
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw input_error(at, std::string("--baseline-report: ") + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return baseline_fingerprints(text, path);
}

std::size_t apply_baseline(lint_report& r, const std::set<std::string>& known) {
  std::size_t removed = 0;
  std::vector<engine::finding> kept;
  std::vector<std::vector<std::string>> kept_fps;
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    engine::finding& f = r.findings[i];
    const std::vector<std::string>& fps = r.fingerprints.at(i);
    std::vector<source_location> places;
    std::vector<std::string> left_fps;
    std::size_t first_left = fps.size();
    for (std::size_t p = 0; p < fps.size(); ++p) {
      if (known.count(fps[p])) {
        ++removed;
        continue;
      }
      if (first_left == fps.size()) first_left = p;
      places.push_back(p == 0 ? f.location : f.also_at[p - 1]);
      left_fps.push_back(fps[p]);
    }
    if (places.empty()) continue;
    // The include chain belongs to the first place only.
    if (first_left != 0) f.include_chain.clear();
    f.location = places.front();
    f.also_at.assign(places.begin() + 1, places.end());
    kept.push_back(std::move(f));
    kept_fps.push_back(std::move(left_fps));
  }
  r.findings = std::move(kept);
  r.fingerprints = std::move(kept_fps);
  return removed;
}

}  // namespace ngxtls::report
