#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "fixtures.h"

extern char** environ;

namespace hub::testing {

namespace {

constexpr const char* kChildFlag = "--hub-child";
constexpr const char* kParentEnv = "HUB_TEST_PARENT_PID";

std::map<std::string, ChildModeFn>& modes() {
  static auto* m = new std::map<std::string, ChildModeFn>;
  return *m;
}

[[noreturn]] void fail(const std::string& message);

std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) fail("readlink /proc/self/exe: " + std::string(std::strerror(errno)));
  return std::string(buf, static_cast<size_t>(n));
}

// Failures throw (no doctest assertions here: child modes run outside any
// test case); a test case that gets the exception fails with its message.
[[noreturn]] void fail(const std::string& message) { throw std::runtime_error(message); }

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Dies with the parent, and not at all if the parent is already gone (the
// signal is only armed for a parent alive at the prctl call).
void die_with_parent() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const char* parent = std::getenv(kParentEnv);
  if (parent && std::to_string(::getppid()) != parent) ::_exit(125);
}

}  // namespace

ChildModeRegistrar::ChildModeRegistrar(const char* name, ChildModeFn fn) { modes()[name] = fn; }

bool run_child_mode(int argc, char** argv, int* status) {
  if (argc < 3 || std::strcmp(argv[1], kChildFlag) != 0) return false;
  die_with_parent();
  const std::string mode = argv[2];
  if (mode == "exec") {
    // argv: self --hub-child exec -- PROGRAM ARGS...
    if (argc < 5) {
      std::fprintf(stderr, "child mode exec: no program\n");
      *status = 2;
      return true;
    }
    ::execvp(argv[4], argv + 4);
    std::fprintf(stderr, "child mode exec: cannot run %s: %s\n", argv[4], std::strerror(errno));
    *status = 127;
    return true;
  }
  auto it = modes().find(mode);
  if (it == modes().end()) {
    std::fprintf(stderr, "unknown child mode '%s'\n", mode.c_str());
    *status = 2;
    return true;
  }
  std::vector<std::string> args(argv + 3, argv + argc);
  try {
    *status = it->second(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child mode %s: %s\n", mode.c_str(), e.what());
    *status = 1;
  }
  return true;
}

Child Child::spawn(const std::vector<std::string>& argv, const ChildOptions& options) {
  if (argv.empty()) fail("Child::spawn: empty argv");
  std::vector<std::string> full{self_exe(), kChildFlag, "exec", "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  return start(full, argv[0], options);
}

Child Child::self(const std::string& mode, const std::vector<std::string>& args, const ChildOptions& options) {
  std::vector<std::string> full{self_exe(), kChildFlag, mode};
  full.insert(full.end(), args.begin(), args.end());
  return start(full, "child mode " + mode, options);
}

// Runs `full` (this binary in a child mode) in a new process group.
Child Child::start(std::vector<std::string> full, const std::string& what, const ChildOptions& options) {
  std::vector<std::pair<std::string, std::string>> set = options.env;
  set.emplace_back(kParentEnv, std::to_string(::getpid()));
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const auto& kv : set) replaced = replaced || entry.rfind(kv.first + "=", 0) == 0;
    if (!replaced) env.push_back(std::move(entry));
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (auto& a : full) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  int fds[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.capture_stdout) {
    if (::pipe2(fds, O_CLOEXEC) != 0) fail("pipe2: " + std::string(std::strerror(errno)));
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, cargv[0], &actions, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (options.capture_stdout) ::close(fds[1]);
  if (rc != 0) {
    if (fds[0] >= 0) ::close(fds[0]);
    fail("posix_spawn " + what + ": " + std::strerror(rc));
  }
  Child c;
  c.pid_ = pid;
  c.out_fd_ = fds[0];
  return c;
}

Child::Child(Child&& other) noexcept { *this = std::move(other); }

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    reap_killed();
    pid_ = std::exchange(other.pid_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    buffered_ = std::move(other.buffered_);
  }
  return *this;
}

Child::~Child() { reap_killed(); }

void Child::kill(int sig) const {
  if (pid_ > 0) ::kill(-pid_, sig);
}

void Child::reap_killed() {
  if (out_fd_ >= 0) {
    ::close(out_fd_);
    out_fd_ = -1;
  }
  if (pid_ <= 0) return;
  kill(SIGKILL);
  // SIGKILL cannot be blocked; a child stuck in the kernel (D state) is the
  // only way this takes long, and then we stop waiting rather than hang.
  auto t0 = Clock::now();
  while (::waitpid(pid_, nullptr, WNOHANG) == 0 && seconds_since(t0) < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  pid_ = -1;
}

namespace {
// Reads what is available on fd into out, waiting at most `wait_ms`. Returns
// false at EOF (or error).
bool read_some(int fd, std::string& out, int wait_ms) {
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, wait_ms);
  if (r <= 0) return r == 0 || errno == EINTR;
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    out.append(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && errno == EINTR;
}
}  // namespace

std::string Child::read_exactly(size_t n, double timeout_s) {
  if (out_fd_ < 0) fail("read_exactly: the child's output is not captured");
  auto t0 = Clock::now();
  while (buffered_.size() < n) {
    if (seconds_since(t0) > timeout_s) {
      std::ostringstream m;
      m << "child " << pid_ << " wrote " << buffered_.size() << " of " << n << " bytes within " << timeout_s
        << " s; killed it";
      reap_killed();
      fail(m.str());
    }
    if (!read_some(out_fd_, buffered_, 50)) {
      std::ostringstream m;
      m << "child " << pid_ << " closed its output after " << buffered_.size() << " of " << n << " bytes: '"
        << buffered_ << "'";
      fail(m.str());
    }
  }
  std::string head = buffered_.substr(0, n);
  buffered_.erase(0, n);
  return head;
}

ChildResult Child::wait(double timeout_s, const std::string& what) {
  ChildResult r;
  if (pid_ <= 0) return r;
  auto t0 = Clock::now();
  auto remaining_ms = [&] { return static_cast<int>(std::max(0.0, (timeout_s - seconds_since(t0)) * 1000)); };
  r.output = std::move(buffered_);
  buffered_.clear();
  while (out_fd_ >= 0 && remaining_ms() > 0) {
    if (!read_some(out_fd_, r.output, std::min(remaining_ms(), 100))) {
      ::close(out_fd_);
      out_fd_ = -1;
    }
  }
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid_, &status, WNOHANG)) == 0 && remaining_ms() > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (done != pid_) {
    std::ostringstream m;
    m << what << " (pid " << pid_ << ") did not end within " << timeout_s << " s; killed it. Output: '" << r.output
      << "'";
    reap_killed();
    fail(m.str());
  }
  pid_ = -1;
  if (out_fd_ >= 0) {
    ::close(out_fd_);
    out_fd_ = -1;
  }
  if (WIFEXITED(status)) {
    r.exited = true;
    r.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

int run_shell(const std::string& command, double timeout_s) {
  ChildResult r =
      Child::spawn({"/bin/sh", "-c", command}, {.env = {}, .capture_stdout = false}).wait(timeout_s, command);
  return r.exited ? r.code : -1;
}

std::string hub_exe() {
  const char* v = std::getenv("HUB_EXE");
  if (!v) throw std::runtime_error("HUB_EXE is not set (run through meson test)");
  return v;
}

HubRun run_hub(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
               double timeout_s) {
  TempDir tmp("hub_run");
  std::string cmd = "exec \"$0\"";
  for (size_t i = 0; i < args.size(); ++i) cmd += " \"${" + std::to_string(i + 1) + "}\"";
  cmd += " 2>'" + (tmp / "err") + "'";
  std::vector<std::string> argv = {"/bin/sh", "-c", cmd, hub_exe()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildOptions o;
  o.env = env;
  ChildResult r = Child::spawn(argv, o).wait(timeout_s, "hub " + (args.empty() ? "" : args[0]));
  return {r.exited ? r.code : -1, r.signal, r.output, read_file(tmp.path / "err")};
}

}  // namespace hub::testing
