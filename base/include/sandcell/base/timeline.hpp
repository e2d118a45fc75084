#pragma once
// Timestamps along a run, for whoever measures where its milliseconds go (bench/timeline.py).
//
// Off unless the process starts with SANDCELL_TIMELINE set to a file: then every mark appends
// "PID NAME MICROSECONDS\n" to it (CLOCK_MONOTONIC, so marks of several processes and of the
// measuring client line up), the sandbox's child and init included: they inherit the file's fd
// (close-on-exec: the program never has it). Off, a mark is one load and one branch.
//
// mark() allocates nothing, takes no lock and calls only write(2) and clock_gettime(2): it may
// be called between clone and execve (child_plan.hpp), from any thread, and from a signal handler.
// Each line is one write to an O_APPEND file, so lines of concurrent writers do not interleave.
namespace sandcell::timeline {

// Opens the file named by SANDCELL_TIMELINE, if any; call once, early in main(), before any
// thread or child exists. Later calls do nothing.
void start();

// Appends one line for `name` (a short literal without spaces); nothing when off.
void mark(const char* name);

}  // namespace sandcell::timeline
