#pragma once
// Test helpers: temporary directories, free loopback ports, running commands.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ngxtls::test {

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  /// Writes `content` to path()/name (creating parent dirs) and returns the full path.
  std::filesystem::path write(const std::string& name, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

/// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back, close).
int free_port();

/// The result of a finished command.
struct command_result {
  int exit_code = -1;  ///< exit status, or 128+signal when killed by a signal
  std::string out;     ///< stdout
  std::string err;     ///< stderr
};

/// Runs argv (argv[0] looked up on PATH) with `input` on stdin; waits at most
/// `timeout_s` seconds, then kills it (exit_code 128+9). Throws std::runtime_error when it
/// cannot be started.
command_result run(const std::vector<std::string>& argv, const std::string& input = "",
                   int timeout_s = 120);

/// run() with `before_exec` called in the forked child just before exec (it must only make
/// system calls); when it returns false the child exits with 127 without running argv.
command_result run(const std::vector<std::string>& argv, const std::string& input, int timeout_s,
                   const std::function<bool()>& before_exec);

/// Path of the ngxtls binary under test ($NGXTLS_TEST_BINARY, else this build's), and of the
/// source tree.
std::string ngxtls_binary();
std::filesystem::path source_dir();

/// The cases from real bug reports (fixtures/cases, with their README and make-pki.sh).
std::filesystem::path cases_dir();

/// The real-config corpus (MANIFEST.tsv, files/, crossplane_nocheck/): fetched data that the
/// repository does not hold. $NGXTLS_CORPUS_DIR, else $NGXTLS_SHARED_DIR/corpus, else
/// ../shared/corpus beside the source tree; nullopt when none holds a MANIFEST.tsv.
std::optional<std::filesystem::path> corpus_dir();

/// A file of the team's shared folder (e.g. "schemas/sarif-schema-2.1.0.json"):
/// $NGXTLS_SHARED_DIR, else ../shared beside the source tree; nullopt when absent.
std::optional<std::filesystem::path> shared_file(const std::string& relative);

/// Marks the running test as skipped: prints the marker line that ctest's
/// SKIP_REGULAR_EXPRESSION (tests/CMakeLists.txt) turns into a SKIP, with `why`.
void skip_test(const std::string& why);

/// Why a corpus test is skipped, with the command that fetches the corpus.
std::string corpus_missing_reason();

/// Reads a whole file; throws std::runtime_error when it cannot.
std::string read_file(const std::filesystem::path& p);

}  // namespace ngxtls::test
