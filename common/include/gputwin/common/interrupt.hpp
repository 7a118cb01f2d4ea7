#pragma once
// Ctrl-C for the command-line tools: one line on stderr, the child processes stopped, exit status 130 (128 + SIGINT,
// what a shell reports for an interrupted command) -- instead of a silent death, SimGrid's silent exit 1, or one
// error per child that died of the same Ctrl-C.
//
// The tool installs the handler once (install_interrupt_handler); code that forks registers its children
// (register_child / forget_child) and calls ignore_interrupts_in_child() in each child, so that only the parent
// reports the interrupt and it stops the children itself (a terminal sends SIGINT to the whole process group).
// Temporary output files are removed before the handler runs (common/output_file.hpp chains to it).
// POSIX only, no allocation in the handler.

#include <string>
#include <sys/types.h>

namespace gputwin {

// Installs the SIGINT handler: it kills (SIGKILL) and reaps every registered child, writes `message` and a newline
// to stderr (after erasing a progress bar's line when stderr is a terminal) and ends the process with _exit(130).
// Nothing is installed when SIGINT is ignored at the call (a background job of a non-interactive shell, nohup):
// such a run keeps ignoring it. `message` is cut to 255 bytes.
void install_interrupt_handler(const std::string& message);

// Puts back what this file set for SIGINT (the handler, or SIG_IGN in a child) after a library replaced it
// (SimGrid's engine installs its own, which exits 1 without a word); does nothing when it set nothing.
void restore_interrupt_handler();

// A child process the handler stops before it exits, until forget_child. At most 1024 at a time (more are not
// registered; they still die with the parent where they set PR_SET_PDEATHSIG).
void register_child(pid_t pid);

// The child is no longer the handler's to stop (call it before reaping the child, so its id cannot be reused).
void forget_child(pid_t pid);

// In a freshly forked child: SIGINT ignored (the parent reports the interrupt and kills it) and the registered
// children (its siblings, copied by fork) forgotten.
void ignore_interrupts_in_child();

} // namespace gputwin
