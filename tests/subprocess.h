// Child processes for tests, started safely from a multithreaded test process.
//
// A test process runs threads (loopback HTTP servers, registry workers), and
// after fork() the child of a multithreaded process may only make
// async-signal-safe calls: one that allocates can wait forever on a lock
// another thread held at the fork (issue #20). So a child is always a fresh
// program image started with posix_spawn, never fork-and-continue:
//   - Child::spawn(argv) runs a program (the hub binary, nginx, ...);
//   - Child::self(mode, args) re-executes this test binary in a child mode
//     registered with HUB_TEST_CHILD_MODE, which runs a function of the test
//     file without starting doctest (tests/main.cc dispatches it).
//
// Both go through this binary's "exec" child mode, which sets
// PR_SET_PDEATHSIG = SIGKILL before exec'ing the target, so a child dies with
// the test process even when that is killed by a timeout (the signal fires
// when the spawning *thread* ends: spawn children from the test's own
// thread). Every child leads its own process group; destroying a Child sends
// SIGKILL to the group and reaps it with a bounded wait. wait() kills the
// child and throws std::runtime_error (failing the running test case with
// that message) when it has not ended within its timeout, so a hung child
// never hangs the suite. Nothing here uses doctest's assertions: child modes
// run outside any test case.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hub::testing {

struct ChildOptions {
  // Extra environment entries for the child (NAME -> value), on top of ours.
  std::vector<std::pair<std::string, std::string>> env;
  // Pipe the child's stdout to read_exactly()/wait(); else it inherits ours.
  bool capture_stdout = true;
};
struct ChildResult {
  bool exited = false;  // normal exit (code valid)
  int code = -1;        // exit status when exited
  int signal = 0;       // terminating signal when killed
  std::string output;   // captured stdout
};

// One child process (move-only); see the file comment.
class Child {
 public:
  // Starts argv[0] (a path, or a name looked up in $PATH) with `argv`.
  static Child spawn(const std::vector<std::string>& argv, const ChildOptions& options = {});
  // Re-executes this test binary in child mode `mode` with `args`.
  static Child self(const std::string& mode, const std::vector<std::string>& args = {},
                    const ChildOptions& options = {});

  Child() = default;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Sends `sig` to the child's process group.
  void kill(int sig) const;
  // Reads captured stdout until EOF, then reaps the child. After `timeout_s`
  // kills the child's group and throws std::runtime_error naming `what`.
  ChildResult wait(double timeout_s, const std::string& what = "child process");
  // Reads exactly `n` bytes of captured stdout (e.g. a port the child
  // reports); throws std::runtime_error at EOF or after `timeout_s`.
  std::string read_exactly(size_t n, double timeout_s);

 private:
  static Child start(std::vector<std::string> full, const std::string& what, const ChildOptions& options);
  void reap_killed();
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffered_;
};

// Runs a shell command line (/bin/sh -c, for its redirections) as a Child
// with stdout inherited; returns its exit status, or -1 when a signal ended
// it. Throws as Child::wait() after `timeout_s`.
int run_shell(const std::string& command, double timeout_s = 60);

// The hub binary under test: $HUB_EXE, which meson test sets (throws
// std::runtime_error when it is not set).
std::string hub_exe();

// One run of the hub binary: exit status (-1 when a signal ended it, then
// `signal`), stdout, stderr.
struct HubRun {
  int code = -1;
  int signal = 0;
  std::string out, err;
};
// Runs `hub ARGS` with `env` added to the environment; stdout captured,
// stderr through a file. Throws as Child::wait() after `timeout_s`.
HubRun run_hub(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env = {},
               double timeout_s = 120);

// Child modes: `HUB_TEST_CHILD_MODE(name) { ... return code; }` defines a
// function of `const std::vector<std::string>& args` that Child::self(name,
// args) runs in a fresh process; its return value is the exit status.
using ChildModeFn = int (*)(const std::vector<std::string>& args);
struct ChildModeRegistrar {
  ChildModeRegistrar(const char* name, ChildModeFn fn);
};
// For tests/main.cc: runs the child mode named in argv when the process was
// started as a child ("--hub-child MODE ARGS..."). Returns true and sets
// `status` when it did.
bool run_child_mode(int argc, char** argv, int* status);

}  // namespace hub::testing

#define HUB_TEST_CHILD_MODE(name)                                                                          \
  static int hub_child_mode_##name(const std::vector<std::string>& args);                                  \
  static ::hub::testing::ChildModeRegistrar hub_child_mode_registrar_##name(#name, hub_child_mode_##name); \
  static int hub_child_mode_##name([[maybe_unused]] const std::vector<std::string>& args)
