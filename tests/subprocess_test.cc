// The test-process helper (tests/subprocess.h): children are fresh
// processes that report their output and status, and die with their parent.
#include "subprocess.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

using hub::testing::Child;
using hub::testing::ChildResult;

HUB_TEST_CHILD_MODE(echo_and_exit) {
  std::printf("%s", args.at(0).c_str());
  return std::stoi(args.at(1));
}

// Says it is running (so its death signal is armed), then sleeps.
HUB_TEST_CHILD_MODE(sleep_forever) {
  std::printf("r");
  std::fflush(stdout);
  while (true) ::pause();
}

// Starts a sleeper, reports its pid and ends at once without cleaning up, as
// a test process killed by its timeout would.
HUB_TEST_CHILD_MODE(abandon_a_sleeper) {
  Child sleeper = Child::self("sleep_forever");
  sleeper.read_exactly(1, 30);
  std::printf("%010d", static_cast<int>(sleeper.pid()));
  std::fflush(stdout);
  std::_Exit(0);
}

TEST_CASE("a child reports its output and exit status") {
  Child c = Child::self("echo_and_exit", {"hello", "3"});
  ChildResult r = c.wait(30, "echo child");
  CHECK(r.exited);
  CHECK(r.code == 3);
  CHECK(r.output == "hello");
}

TEST_CASE("a program is started through PATH and killed as a group") {
  Child c = Child::spawn({"sleep", "60"});
  c.kill(SIGTERM);
  ChildResult r = c.wait(10, "sleep");
  CHECK_FALSE(r.exited);
  CHECK(r.signal == SIGTERM);
}

TEST_CASE("a child's own child dies when the child dies") {
  // Orphans are re-parented to us, so we can see the sleeper end.
  REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  Child c = Child::self("abandon_a_sleeper");
  pid_t sleeper = std::stoi(c.read_exactly(10, 30));
  CHECK(c.wait(30, "abandoning child").code == 0);
  int status = 0;
  pid_t done = 0;
  auto t0 = std::chrono::steady_clock::now();
  while ((done = ::waitpid(sleeper, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  REQUIRE(done == sleeper);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}
