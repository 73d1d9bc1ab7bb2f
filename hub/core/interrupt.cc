#include "hub/core/interrupt.h"

#include <signal.h>

#include <atomic>

namespace hub {
namespace {

std::atomic<int> g_scopes{0};
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs lock-free atomics");

extern "C" void hub_interrupt_handler(int sig) {
  // Async-signal-safe: atomics, signal(), raise().
  ::signal(sig, SIG_DFL);
  if (g_scopes.load() == 0) {
    ::raise(sig);  // nothing to clean up: the default action, now
    return;
  }
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = hub_interrupt_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR and get to poll
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_signal.load() != 0; }

void reraise_if_interrupted() {
  const int sig = g_signal.load();
  if (sig == 0) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

InterruptibleScope::InterruptibleScope() { g_scopes.fetch_add(1); }
InterruptibleScope::~InterruptibleScope() { g_scopes.fetch_sub(1); }

}  // namespace hub
