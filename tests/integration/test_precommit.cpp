// The pre-commit hook (.pre-commit-hooks.yaml) as a user meets it: Debian's pre-commit runs
// `try-repo` on this repository from a scratch git repository, offline, with the ngxtls under
// test on PATH; a config with a finding fails the hook, a clean one passes, other files are
// not passed to it. Also the shape of the hook file, the action and the GitLab CI job.

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>

#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace ngxtls;
using namespace ngxtls::test;

namespace {

// Runs `script` with sh in `cwd`, with the build directory first on PATH and pre-commit's cache
// in `home`.
command_result sh_in(const fs::path& cwd, const fs::path& home, const std::string& script) {
  const std::string bin = fs::path(ngxtls_binary()).parent_path().string();
  return run({"/usr/bin/env", "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin",
              "HOME=" + home.string(), "PRE_COMMIT_HOME=" + (home / "pre-commit").string(),
              "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t",
              "GIT_COMMITTER_EMAIL=t@example.invalid", "/bin/sh", "-c", "cd \"$0\" && " + script,
              cwd.string()},
             "", 300);
}

}  // namespace

TEST_CASE("pre-commit try-repo runs the ngxtls-lint hook on staged nginx files") {
  if (run({"sh", "-c", "command -v pre-commit"}, "", 10).exit_code != 0)
    return skip_test("pre-commit is not installed (scripts/install-deps.sh installs it)");
  if (!fs::exists(source_dir() / ".git"))
    return skip_test("the source tree is not a git repository: try-repo needs one");
  temp_dir scratch, home;
  const fs::path repo = scratch.path() / "site";
  fs::create_directories(repo);
  REQUIRE(sh_in(repo, home.path(), "git init -q .").exit_code == 0);
  // The nginx version is pinned in the scratch repository's .ngxtls.toml, as a user would; a
  // three-day session lifetime is a session-timeout-too-long warning at line 7.
  scratch.write("site/.ngxtls.toml", "nginx_version = \"1.30.6\"\n");
  const std::string server =
      "server {\n    listen 443 ssl;\n    server_name a.example;\n"
      "    ssl_certificate /etc/ssl/a.pem;\n    ssl_certificate_key /etc/ssl/a.key;\n"
      "    ssl_session_cache shared:SSL:10m;\n";
  scratch.write("site/nginx/sites-enabled/a.conf", server + "    ssl_session_timeout 3d;\n}\n");
  scratch.write("site/README.md", "not nginx\n");
  REQUIRE(sh_in(repo, home.path(), "git add -A").exit_code == 0);
  const std::string try_repo =
      "pre-commit try-repo '" + source_dir().string() + "' ngxtls-lint --verbose --all-files";
  auto bad = sh_in(repo, home.path(), try_repo);
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.find("ngxtls lint (nginx TLS configuration)") != std::string::npos);
  CHECK(bad.out.find("Failed") != std::string::npos);
  CHECK(bad.out.find("nginx/sites-enabled/a.conf:7:5: warning [session-timeout-too-long]") !=
        std::string::npos);
  CHECK(bad.out.find("README.md") == std::string::npos);

  // Fixed: the hook passes.
  scratch.write("site/nginx/sites-enabled/a.conf", server + "    ssl_session_timeout 1h;\n}\n");
  REQUIRE(sh_in(repo, home.path(), "git add -A").exit_code == 0);
  auto plain = sh_in(repo, home.path(), try_repo);
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.find("Passed") != std::string::npos);
}

TEST_CASE("the hook file, the GitHub action and the GitLab job have the shape their tools read") {
  // pre-commit's own schema check of a hooks file.
  if (run({"sh", "-c", "command -v pre-commit"}, "", 10).exit_code == 0) {
    auto v =
        run({"pre-commit", "validate-manifest", (source_dir() / ".pre-commit-hooks.yaml").string()},
            "", 60);
    CHECK_MESSAGE(v.exit_code == 0, (v.out + v.err));
  }
  // action.yml and ci/gitlab-ci.yml read with PyYAML (python3-yaml comes with pre-commit);
  // every ${{ inputs.X }} is a declared input, every step of a composite action has a shell,
  // and each command they run is an ngxtls subcommand with options `ngxtls lint --help` lists.
  temp_dir d;
  d.write("shape.py", R"(import re, sys, yaml
action = yaml.safe_load(open(sys.argv[1]))
assert action["runs"]["using"] == "composite", action["runs"]
inputs = set(action["inputs"])
for step in action["runs"]["steps"]:
    assert "shell" in step and "run" in step, step
    for used in re.findall(r"\$\{\{\s*inputs\.([a-z_]+)\s*\}\}", yaml.safe_dump(step)):
        assert used in inputs, used
for name, spec in action["inputs"].items():
    assert "description" in spec, name
gitlab = yaml.safe_load(open(sys.argv[2]))
job = gitlab["ngxtls-lint"]
assert job["image"]["entrypoint"] == [""], job["image"]
assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality.json"
assert job["artifacts"]["reports"]["junit"] == "gl-ngxtls-junit.xml"
for line in job["script"]:
    print(line)
print(action["runs"]["steps"][1]["run"])
)");
  auto shape =
      run({"python3", (d.path() / "shape.py").string(), (source_dir() / "action.yml").string(),
           (source_dir() / "ci/gitlab-ci.yml").string()},
          "", 60);
  REQUIRE_MESSAGE(shape.exit_code == 0, shape.err);
  auto help = run({ngxtls_binary(), "lint", "--help"}, "", 30).out;
  static const std::regex flag(R"((--[a-z][a-z-]+))");
  for (std::sregex_iterator it(shape.out.begin(), shape.out.end(), flag), end; it != end; ++it) {
    const std::string f = (*it)[1];
    if (f == "--rm" || f == "--network") continue;  // docker's own
    CAPTURE(f);
    CHECK(help.find(f) != std::string::npos);
  }
}

TEST_CASE("the action's lint step writes SARIF into the workspace with repository paths") {
  // The action's second step, run by bash as the runner runs it, with `docker run IMAGE ARGS`
  // standing for `ngxtls ARGS` (no docker here): the ngxtls part is what is exercised.
  temp_dir d;
  d.write("ws/deploy/nginx.conf",
          "events {}\nhttp {\n  server {\n    listen 443 ssl;\n    ssl_session_cache builtin;\n"
          "  }\n}\n");
  d.write("bin/docker",
          "#!/bin/sh\n# docker run --rm -u U -v A:B -w W IMAGE ARGS... -> ngxtls ARGS\n"
          "shift; while [ $# -gt 0 ]; do case $1 in --rm) shift;; -u|-v|-w) shift 2;; "
          "*) shift; break;; esac; done\nexec \"$NGXTLS\" \"$@\"\n");
  fs::permissions(d.path() / "bin/docker", fs::perms::owner_all);
  d.write("step.py", R"(import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["runs"]["steps"][1]["run"])
)");
  auto step = run(
      {"python3", (d.path() / "step.py").string(), (source_dir() / "action.yml").string()}, "", 60);
  REQUIRE(step.exit_code == 0);
  const auto script = d.write("step.sh", step.out);
  auto r = run({"/usr/bin/env", "PATH=" + (d.path() / "bin").string() + ":/usr/bin:/bin",
                "NGXTLS=" + ngxtls_binary(), "GITHUB_WORKSPACE=" + (d.path() / "ws").string(),
                "NGXTLS_PATHS=deploy/nginx.conf", "NGXTLS_SARIF=ngxtls.sarif",
                "NGXTLS_FAIL_ON=never", "NGXTLS_BASELINE_REPORT=", "NGXTLS_NGINX_VERSION=1.22.1",
                "/bin/bash", "-c", "cd \"$GITHUB_WORKSPACE\" && bash \"$0\"", script.string()},
               "", 120);
  REQUIRE_MESSAGE(r.exit_code == 0, (r.out + r.err));
  const std::string sarif = read_file(d.path() / "ws/ngxtls.sarif");
  CHECK(sarif.find("\"uri\": \"deploy/nginx.conf\"") != std::string::npos);
  CHECK(sarif.find("session-cache-per-worker") != std::string::npos);
}
