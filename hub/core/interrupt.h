// Cooperative interruption by SIGINT/SIGTERM, so that an interrupted command
// cleans up as it does on an error (locks released, work folders removed).
//
// A program that wants this (the `hub` CLI) calls install_interrupt_handlers()
// once. Library code that can clean up (the resolver while it downloads or
// waits for a lock) holds an InterruptibleScope and polls interrupted(),
// failing with hub::Error(kUnavailable, "interrupted") when it is true. A
// signal that arrives while no scope is held terminates the process at once,
// as if no handler were installed; one that arrives inside a scope only sets
// the flag, and the default action is restored, so a second signal ends the
// process immediately. The program finally calls reraise_if_interrupted() to
// exit with the conventional status (killed by that signal: 130 for SIGINT,
// 143 for SIGTERM in a shell).
//
// Without install_interrupt_handlers() nothing changes: interrupted() stays
// false and signals keep their default action. All functions are
// async-signal-safe where it matters and thread-safe.
#pragma once

namespace hub {

// Installs the SIGINT and SIGTERM handlers described above.
void install_interrupt_handlers();
// True once a handled signal arrived inside an InterruptibleScope.
bool interrupted();
// If interrupted(), restores the default action and raises that signal
// again (does not return then).
void reraise_if_interrupted();

// Marks a region that polls interrupted() and cleans up when it is set.
class InterruptibleScope {
 public:
  InterruptibleScope();
  ~InterruptibleScope();
  InterruptibleScope(const InterruptibleScope&) = delete;
  InterruptibleScope& operator=(const InterruptibleScope&) = delete;
};

}  // namespace hub
