#!/usr/bin/env bash
# ctest runs the unit tests one suite per process (CMakeLists.txt reads the suites from the
# TEST(Suite, ...) lines of the sources). This checks that the suites ctest knows are exactly the
# suites the test binary holds, so that no test is silently left out of `make test`.
#   tests/suites_listed_test.sh build/infralens_tests "SuiteA SuiteB ..."
set -u
bin="$1"
configured=$(tr ' ' '\n' <<<"$2" | sed '/^$/d' | sort -u)
# --gtest_list_tests prints "Suite." or "Prefix/Suite." at the start of a line, tests indented.
held=$("$bin" --gtest_list_tests | awk '/^[^ ].*\.$/{sub(/\.$/, ""); sub(/^.*\//, ""); print}' | sort -u)
if [ "$configured" != "$held" ]; then
  echo "suites in the binary but not run by ctest (re-run cmake, or write TEST(Suite, on one line):"
  comm -13 <(echo "$configured") <(echo "$held")
  echo "suites ctest runs that the binary does not hold:"
  comm -23 <(echo "$configured") <(echo "$held")
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$(wc -l <<<"$held") suites, each run by ctest"
