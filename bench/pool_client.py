#!/usr/bin/env python3
"""bench/pool.sh's client: python snippets through every path at once, interleaved.

Each round sends every snippet through every line once, in an order that rotates from round to
round (as bench/interleave.py does for commands), so the machine's drift slows every path alike.
A line is one of:

  NAME=cmd:COMMAND        a process per snippet (shlex-split; leading VAR=VALUE words set its
                          environment; {code} is replaced by the snippet, {file} by a file holding
                          it); its stdout must be the snippet's expected output
  NAME=http:PORT          POST /v1/run {"skill": "python", "code": ...} to `sandcell serve` on
                          127.0.0.1:PORT, one keep-alive connection, bearer token --token
  NAME=mcp:COMMAND        `sandcell mcp` started here: initialize, then tools/call run_code
                          (language python) per snippet, over its stdin/stdout

A line named in --settle is followed by rest until its server is idle again (a pooled line: its
pool refills before the next measurement, so every request of it finds a prepared sandbox and no
measurement pays for another line's refill): until the server's tree holds --pool-size python3
processes (its prepared sandboxes' interpreters) and its CPU time (the server's and everything
below it) has not grown for two 0.2 s looks in a row, at most --settle-seconds. The server's pid
is the one --rss names for the line (an mcp line's is known). HTTP results say whether they were pooled (`report.pooled`), MCP's in their summary (`pooled`);
MCP's do not.

--rss NAME=PID (after the fill wait, before the first round): the resident memory of PID itself
and of all its descendants together (Rss and Pss from /proc/PID/smaps_rollup), e.g. a server and
its prepared sandboxes. An mcp line's own server is measured as --rss NAME=self.

Writes JSON (--json): per line and snippet the times in ms and median, mean, p10, p90, p99, min,
pooled count, and the median of the per-round differences to the first line ("paired").

Without --lines it is the old pool.sh client: `pool_client.py PORT TOKEN N PACE LABEL` sends N
sequential print(1) requests PACE seconds apart and prints one Markdown row.
"""
import argparse
import http.client
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

SNIPPETS = {
    "print": ("print(1)", "1\n"),
    "numpy": ("import numpy as np; print(np.arange(10).sum())", "45\n"),
}


def percentile(sorted_values, fraction):
    return sorted_values[round(fraction * (len(sorted_values) - 1))]


def wait_for_health(port):
    deadline = time.monotonic() + 30
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            c.request("GET", "/v1/health")
            c.getresponse().read()
            return c
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class CommandLine:
    def __init__(self, command, workdir):
        self.argv = shlex.split(command)
        self.workdir = workdir

    def run(self, snippet):
        code, expected = SNIPPETS[snippet]
        path = os.path.join(self.workdir, f"{snippet}.py")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(code + "\n")
        argv, env = list(self.argv), None
        while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):
            env = dict(os.environ) if env is None else env
            key, value = argv.pop(0).split("=", 1)
            env[key] = value
        argv = [word.replace("{code}", code).replace("{file}", path) for word in argv]
        start = time.perf_counter()
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, check=False)
        ms = (time.perf_counter() - start) * 1000
        if done.returncode != 0 or done.stdout.decode() != expected:
            sys.exit(f"pool_client.py: {shlex.join(argv)} exited {done.returncode}, stdout "
                     f"{done.stdout[:200]!r}, stderr {done.stderr[-500:]!r}")
        return ms, False


class HttpLine:
    # The server closes a keep-alive connection after 5 s idle or 5 requests (cpp-httplib's
    # defaults): a connection idle for a while is replaced before the clock starts, and one the
    # server closed meanwhile is replaced and the request sent again (timed from the new start).
    IDLE_SECONDS = 2.0

    def __init__(self, port, token):
        self.port = port
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.connection = wait_for_health(port)
        self.last_used = time.monotonic()

    def reconnect(self):
        self.connection.close()
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        self.connection.connect()

    def run(self, snippet):
        code, expected = SNIPPETS[snippet]
        # Bytes: http.client sends the head and a bytes body in one segment, as curl and ab do (a
        # str body goes in a second one, which Nagle holds until the head is acknowledged).
        body = json.dumps({"skill": "python", "code": code}).encode()
        if time.monotonic() - self.last_used > self.IDLE_SECONDS:
            self.reconnect()
        for attempt in (1, 2):
            start = time.perf_counter()
            try:
                self.connection.request("POST", "/v1/run", body, self.headers)
                result = json.loads(self.connection.getresponse().read())
                break
            except (ConnectionError, http.client.RemoteDisconnected):
                if attempt == 2:
                    raise
                self.reconnect()
        ms = (time.perf_counter() - start) * 1000
        self.last_used = time.monotonic()
        if result.get("status") != "ok" or result.get("stdout") != expected:
            sys.exit(f"pool_client.py: serve on port {self.port} answered {result}")
        return ms, bool(result.get("report", {}).get("pooled"))


class McpLine:
    def __init__(self, command):
        self.process = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "sandcell-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def call(self, method, params):
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            line = self.process.stdout.readline()
            if not line:
                sys.exit(f"pool_client.py: sandcell mcp ended (exit {self.process.wait()})")
            message = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message:
                    sys.exit(f"pool_client.py: mcp {method}: {message['error']}")
                return message["result"]

    def run(self, snippet):
        code, expected = SNIPPETS[snippet]
        start = time.perf_counter()
        result = self.call("tools/call", {"name": "run_code",
                                          "arguments": {"language": "python", "code": code}})
        ms = (time.perf_counter() - start) * 1000
        content = result.get("content") or [{}]
        text = content[0].get("text", "")
        if result.get("isError") or text != "stdout:\n" + expected:
            sys.exit(f"pool_client.py: mcp run_code answered {result}")
        # The last text item is the compact summary (agent/service/src/mcp/mcp_tools.cpp), which
        # says "pooled": true for a pooled run.
        try:
            summary = json.loads(content[-1].get("text", ""))
        except ValueError:
            summary = {}
        return ms, isinstance(summary, dict) and summary.get("pooled") is True

    def close(self):
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def tree_memory(pid):
    """kB: (Rss of pid, Pss of pid, Rss of its descendants, Pss of its descendants, their count)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass

    def rollup(p):
        values = {"Rss": 0, "Pss": 0}
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    key, _, rest = line.partition(":")
                    if key in values:
                        values[key] = int(rest.split()[0])
        except OSError:
            pass
        return values["Rss"], values["Pss"]

    own_rss, own_pss = rollup(pid)
    rss = pss = count = 0
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        r, s = rollup(p)
        rss, pss, count = rss + r, pss + s, count + 1
        todo.extend(children.get(p, []))
    return {"rss_kb": own_rss, "pss_kb": own_pss, "descendants_rss_kb": rss,
            "descendants_pss_kb": pss, "descendants": count}


def tree_state(pid):
    """(utime + stime of pid, of its reaped children and of every live descendant, in ticks;
    how many of the descendants are python3)."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    comm, _, rest = f.read().partition(" (")[2].rpartition(")")
                    fields = rest.split()
                stats[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]), comm)
            except (OSError, IndexError, ValueError):
                pass
    total, pythons, todo = 0, 0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0, ""))[1]
        pythons += p != pid and stats.get(p, (0, 0, ""))[2] == "python3"
        todo.extend(child for child, (ppid, _, _) in stats.items() if ppid == p)
    return total, pythons


def wait_until_idle(pid, pool_size, longest):
    """Until the tree under pid holds pool_size interpreters and used no CPU time for two 0.2 s
    looks in a row (or longest seconds)."""
    deadline = time.monotonic() + longest
    last, quiet = tree_state(pid)[0], 0
    while quiet < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        now, pythons = tree_state(pid)
        quiet = quiet + 1 if now == last and pythons >= pool_size else 0
        last = now


def legacy(argv):
    port, token, n, pace, label = int(argv[0]), argv[1], int(argv[2]), float(argv[3]), argv[4]
    line = HttpLine(port, token)
    time.sleep(3)  # the pool fills (it is also what an idle server would have done)
    times, pooled = [], 0
    for _ in range(n):
        ms, was_pooled = line.run("print")
        times.append(ms)
        pooled += was_pooled
        if pace:
            time.sleep(pace)
    times.sort()
    print(f"| {label} | {n} | {pooled} | {statistics.median(times):.1f} | "
          f"{times[int(len(times) * 0.9)]:.1f} |")


def main():
    if len(sys.argv) == 6 and sys.argv[1].isdigit():
        return legacy(sys.argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--snippets", default="print,numpy", help="of: " + ",".join(SNIPPETS))
    parser.add_argument("--token", default="bench")
    parser.add_argument("--settle", default="", help="comma-separated lines to rest after")
    parser.add_argument("--pool-size", type=int, default=1,
                        help="prepared sandboxes a --settle line's server keeps (default 1)")
    parser.add_argument("--settle-seconds", type=float, default=10.0,
                        help="the longest rest after a --settle line (default 10)")
    parser.add_argument("--fill-wait", type=float, default=5.0,
                        help="seconds to wait once everything started (the pools fill)")
    parser.add_argument("--rss", action="append", default=[], metavar="NAME=PID")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--lines", nargs="+", required=True, metavar="NAME=KIND:ARG")
    args = parser.parse_args()
    snippets = args.snippets.split(",")
    if not set(snippets) <= set(SNIPPETS) or args.rounds < 2:
        parser.error("unknown snippet or --rounds < 2")
    settle = set(filter(None, args.settle.split(",")))

    workdir = tempfile.mkdtemp(prefix="sandcell-bench-snippets.")
    os.chmod(workdir, 0o755)
    lines, names = {}, []
    try:
        for spec in args.lines:
            name, _, rest = spec.partition("=")
            kind, _, arg = rest.partition(":")
            if kind == "cmd":
                lines[name] = CommandLine(arg, workdir)
            elif kind == "http":
                lines[name] = HttpLine(int(arg), args.token)
            elif kind == "mcp":
                lines[name] = McpLine(arg)
            else:
                parser.error(f"unknown line kind in {spec!r}")
            names.append(name)
        time.sleep(args.fill_wait)
        server_pid = {}
        for spec in args.rss:
            name, _, pid = spec.partition("=")
            server_pid[name] = lines[name].process.pid if pid == "self" else int(pid)
        if not settle <= set(server_pid):
            parser.error("a --settle line needs its server's pid (--rss)")
        for name in settle:  # the pools are full and their servers idle before the first round
            wait_until_idle(server_pid[name], args.pool_size, args.settle_seconds)
        memory = {name: tree_memory(pid) for name, pid in server_pid.items()}

        pairs = [(name, snippet) for snippet in snippets for name in names]
        times = {pair: [] for pair in pairs}
        pooled = {pair: 0 for pair in pairs}
        for round_number in range(args.warmup + args.rounds):
            shift = round_number % len(pairs)
            for name, snippet in pairs[shift:] + pairs[:shift]:
                ms, was_pooled = lines[name].run(snippet)
                if round_number >= args.warmup:
                    times[(name, snippet)].append(ms)
                    pooled[(name, snippet)] += was_pooled
                if name in settle:
                    wait_until_idle(server_pid[name], args.pool_size, args.settle_seconds)
    finally:
        for line in lines.values():
            if isinstance(line, McpLine):
                line.close()
        for entry in os.listdir(workdir):
            os.unlink(os.path.join(workdir, entry))
        os.rmdir(workdir)

    base = names[0]
    summary = {}
    print(f"{'line':<14} {'snippet':<7} {'median':>8} {'p90':>8} {'p99':>8} {'min':>8} "
          f"{'pooled':>6}   x {base}  paired (ms)")
    for snippet in snippets:
        for name in names:
            values = sorted(times[(name, snippet)])
            paired = statistics.median(t - b for t, b in zip(times[(name, snippet)],
                                                             times[(base, snippet)]))
            s = {"median": statistics.median(values), "mean": statistics.mean(values),
                 "p10": percentile(values, 0.1), "p90": percentile(values, 0.9),
                 "p99": percentile(values, 0.99), "min": values[0], "n": len(values),
                 "pooled": pooled[(name, snippet)], "paired_vs_first": paired}
            summary.setdefault(name, {})[snippet] = s
            ratio = s["median"] / summary[base][snippet]["median"]
            print(f"{name:<14} {snippet:<7} {s['median']:8.1f} {s['p90']:8.1f} {s['p99']:8.1f} "
                  f"{s['min']:8.1f} {s['pooled']:6}   {ratio:6.2f}  {paired:+8.1f}")
    for name, m in memory.items():
        print(f"memory of {name}: itself {m['rss_kb'] / 1024:.1f} MiB RSS; "
              f"{m['descendants']} descendants {m['descendants_rss_kb'] / 1024:.1f} MiB RSS, "
              f"{m['descendants_pss_kb'] / 1024:.1f} MiB PSS")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rounds": args.rounds, "warmup": args.warmup, "order": names,
                       "snippets": {k: SNIPPETS[k][0] for k in snippets},
                       "settle": sorted(settle), "settle_seconds": args.settle_seconds,
                       "summary": summary, "memory": memory,
                       "times_ms": {f"{n}/{s}": v for (n, s), v in times.items()}}, out, indent=1)


if __name__ == "__main__":
    main()
