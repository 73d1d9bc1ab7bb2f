// The test suites' main: a child mode (tests/subprocess.h) or doctest.
//
// doctest's own signal handlers are off (DOCTEST_CONFIG_NO_POSIX_SIGNALS):
// they format a report inside the handler, which allocates, and an
// allocation in a signal handler can deadlock on the allocator's lock
// (issue #20). Instead every test case announces itself on stderr as it
// starts, with one write(2), so the log of a suite that crashed or was killed
// by its timeout ends with the case that was running.
//
// A case that needs a missing optional tool ends with HUB_SKIP_UNLESS, and
// the run then exits with 77 (meson's SKIP). With $HUB_REQUIRE_GRADIENT_CHECKS set (the ops suite), a run also fails
// when a registered op with a gradient had no finite-difference check.
#define DOCTEST_CONFIG_IMPLEMENT
#define DOCTEST_CONFIG_NO_POSIX_SIGNALS
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "subprocess.h"
#include "testutil.h"

namespace {

struct ProgressListener : doctest::IReporter {
  explicit ProgressListener(const doctest::ContextOptions&) {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    std::string line = std::string("[test case] ") + tc.m_name + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("progress", 1, ProgressListener);

}  // namespace

int main(int argc, char** argv) {
  int status = 0;
  if (hub::testing::run_child_mode(argc, argv, &status)) return status;
  doctest::Context context(argc, argv);
  status = context.run();
  if (status == 0 && hub::testing::any_skipped()) return 77;  // meson: SKIP
  if (std::getenv("HUB_REQUIRE_GRADIENT_CHECKS") && !context.shouldExit()) {
    for (const std::string& op : hub::testing::ops_without_gradient_checks()) {
      std::fprintf(stderr, "op %s has a gradient but no check_gradients case ran for it\n", op.c_str());
      status = 1;
    }
  }
  return status;
}
