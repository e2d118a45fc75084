#!/usr/bin/env python3
"""Start-to-exit times of several commands, measured interleaved.

hyperfine runs all of one command's runs, then all of the next's. On a shared VM whose speed
drifts over seconds (this project's CI hosts), whichever command ran in a slow stretch looks slow:
the same binaries swapped places between runs of bench/startup.sh. Here every round runs each
command once, in an order that rotates from round to round, so drift slows every command alike,
and the per-round difference to the first command cancels most of it.

Prints, per command: median, mean, p10, p90 and p99 in ms, and the median of the per-round
differences to the first command ("paired"); writes the raw times as JSON if asked.

usage: bench/interleave.py [--rounds N] [--warmup W] [--json FILE] [--prepare NAME=COMMAND]...
                          NAME=COMMAND...
  COMMAND is split like a shell would (shlex), run without a shell, stdin/stdout/stderr on
  /dev/null; leading VAR=VALUE words set its environment, as a shell's would (without the exec
  of env(1) that would be timed); a command that exits non-zero stops the benchmark. --prepare runs its COMMAND,
  untimed, right before each run of the command called NAME (as hyperfine's --prepare).
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time


def parse_command(text):
    name, sep, command = text.partition("=")
    if not sep or not name or not command.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=COMMAND, got {text!r}")
    return name, shlex.split(command)


def run_once(argv):
    env = None
    while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):
        env = dict(os.environ) if env is None else env
        key, value = argv[0].split("=", 1)
        env[key] = value
        argv = argv[1:]
    start = time.perf_counter_ns()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False, env=env)
    elapsed = time.perf_counter_ns() - start
    return done.returncode, elapsed / 1e6


def percentile(sorted_values, fraction):
    return sorted_values[round(fraction * (len(sorted_values) - 1))]


def main():
    parser = argparse.ArgumentParser(
        description="Interleaved start-to-exit timing of commands (see the module docstring).")
    parser.add_argument("--rounds", type=int, default=200, help="measured rounds (default 200)")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured rounds first (default 5)")
    parser.add_argument("--json", metavar="FILE", help="write the raw times (ms) here")
    parser.add_argument("--prepare", action="append", default=[], type=parse_command,
                        metavar="NAME=COMMAND", help="untimed, before each run of NAME")
    parser.add_argument("commands", nargs="+", type=parse_command, metavar="NAME=COMMAND")
    args = parser.parse_args()
    if args.rounds < 2 or args.warmup < 0:
        parser.error("--rounds must be >= 2 and --warmup >= 0")
    names = [name for name, _ in args.commands]
    if len(set(names)) != len(names):
        parser.error("command names must differ")
    prepare = dict(args.prepare)
    if not set(prepare) <= set(names):
        parser.error(f"--prepare names no command: {', '.join(sorted(set(prepare) - set(names)))}")

    times = {name: [] for name in names}
    count = len(args.commands)
    for round_number in range(args.warmup + args.rounds):
        shift = round_number % count
        for name, argv in args.commands[shift:] + args.commands[:shift]:
            if name in prepare:
                code, _ = run_once(prepare[name])
                if code != 0:
                    sys.exit(f"interleave.py: --prepare of {name} exited with {code}")
            code, ms = run_once(argv)
            if code != 0:
                sys.exit(f"interleave.py: {name} exited with {code}: {shlex.join(argv)}")
            if round_number >= args.warmup:
                times[name].append(ms)

    base = names[0]
    print(f"{'command':<18} {'median':>8} {'mean':>8} {'p10':>8} {'p90':>8} {'p99':>8}   "
          f"paired vs {base} (ms)")
    summary = {}
    for name in names:
        values = sorted(times[name])
        paired = statistics.median(t - b for t, b in zip(times[name], times[base]))
        summary[name] = {"median": statistics.median(values), "mean": statistics.mean(values),
                         "p10": percentile(values, 0.1), "p90": percentile(values, 0.9),
                         "p99": percentile(values, 0.99),
                         "paired_vs_first": paired}
        s = summary[name]
        print(f"{name:<18} {s['median']:8.2f} {s['mean']:8.2f} {s['p10']:8.2f} {s['p90']:8.2f} {s['p99']:8.2f}   "
              f"{paired:+8.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rounds": args.rounds, "warmup": args.warmup, "order": names,
                       "summary": summary, "times_ms": times}, out, indent=1)


if __name__ == "__main__":
    main()
