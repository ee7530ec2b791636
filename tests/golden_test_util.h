// Golden-file testing for everything the CLI prints (the trace_processor way): a test runs a
// command in-process and compares its stdout with tests/golden/<name>. Goldens are reviewed by
// hand when written; INFRALENS_UPDATE_GOLDEN=1 rewrites them after an intended change.
#ifndef INFRALENS_TESTS_GOLDEN_TEST_UTIL_H_
#define INFRALENS_TESTS_GOLDEN_TEST_UTIL_H_

#include <string>
#include <vector>

namespace infralens::testing {

struct CliRun {
  int exit_code = 0;
  std::string out, err;
};

// Runs `infralens args...` in-process, without colour, at 100 columns.
CliRun RunCliCapture(const std::vector<std::string>& args);

// `head` followed by `tail`: a command line put together from flag lists written once.
std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail);

// The interleaved layout several golden files describe: tp 8, pp 4, 5 chunks per pipeline rank.
std::vector<std::string> Tp8Pp4Vpp5Interleaved();

// Compares `actual` with tests/golden/<name>; on mismatch reports the first differing line.
// With INFRALENS_UPDATE_GOLDEN=1 in the environment, writes the file instead.
void ExpectGolden(const std::string& name, const std::string& actual);

// Runs the CLI with `args` and expects it to succeed with the golden file `golden` (under
// tests/golden/) as its stdout; the run, for more checks.
CliRun ExpectCliGolden(const std::vector<std::string>& args, const std::string& golden);

// Absolute path of a file under the source tree.
std::string SourcePath(const std::string& relative);

// The file at `relative` (to the source tree), whole; "" (and a test failure) when it cannot be
// read.
std::string ReadSource(const std::string& relative);

}  // namespace infralens::testing

#endif  // INFRALENS_TESTS_GOLDEN_TEST_UTIL_H_
