#!/usr/bin/env python3
"""Where a sandcell command's milliseconds go: its timeline marks over many runs.

Runs COMMAND --runs times with SANDCELL_TIMELINE set (sandcell/base/timeline.hpp: the
supervisor, the sandbox's child and the program's exec append "PID NAME MICROSECONDS" lines,
CLOCK_MONOTONIC) and prints, per mark, the median, p10 and p90 of its time after the command was
spawned (the first line of that name in each run), in the order of the medians, with the step
from the mark above. "end" is the command's exit as this script saw it. With --program-clock
the command's first line of output is the program's own CLOCK_MONOTONIC in microseconds, shown
as the mark "program"; e.g. for sandcell code, a file with:

    import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)

Marks of processes that run side by side (the supervisor and the child until "go") are not in
each other's order: read their steps per process. A developer's tool, not a benchmark: it
prints no ratios and the marks cost a few microseconds each.

usage: bench/timeline.py [--runs N] [--warmup W] [--program-clock] -- COMMAND...
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(argv, program_clock):
    with tempfile.NamedTemporaryFile(prefix="sandcell-timeline-") as marks:
        env = dict(os.environ, SANDCELL_TIMELINE=marks.name)
        start = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              check=False, env=env)
        end = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        if done.returncode != 0:
            sys.exit(f"bench/timeline.py: the command exited {done.returncode}: {done.stderr.strip()}")
        times = {}
        for line in open(marks.name, encoding="utf-8"):
            _pid, name, usec = line.split()
            times.setdefault(name, (int(usec) - start) / 1000)
    if program_clock:
        first = done.stdout.split("\n", 1)[0].strip()
        if not first.isdigit():
            sys.exit(f"bench/timeline.py: --program-clock: the first line of output is {first!r}, "
                     "not microseconds")
        times["program"] = (int(first) - start) / 1000
    times["end"] = (end - start) / 1000
    return times


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[round(fraction * (len(ordered) - 1))]


def main():
    parser = argparse.ArgumentParser(description="Timeline marks of a sandcell command (see the module docstring).")
    parser.add_argument("--runs", type=int, default=30, help="measured runs (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured runs first (default 3)")
    parser.add_argument("--program-clock", action="store_true",
                        help="the first line of output is the program's CLOCK_MONOTONIC in microseconds")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND...")
    args = parser.parse_args()
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not argv:
        parser.error("no command (bench/timeline.py -- sandcell code --skill python FILE)")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    for _ in range(args.warmup):
        run_once(argv, args.program_clock)
    by_mark = {}
    for _ in range(args.runs):
        for name, ms in run_once(argv, args.program_clock).items():
            by_mark.setdefault(name, []).append(ms)
    rows = sorted(((statistics.median(v), name, v) for name, v in by_mark.items()))
    print(f"{'mark':<16} {'median':>8} {'p10':>8} {'p90':>8} {'step':>8}  runs  (ms after the spawn)")
    previous = 0.0
    for median, name, values in rows:
        print(f"{name:<16} {median:8.2f} {percentile(values, 0.1):8.2f} {percentile(values, 0.9):8.2f} "
              f"{median - previous:8.2f}  {len(values):4}")
        previous = median
    return 0


if __name__ == "__main__":
    sys.exit(main())
