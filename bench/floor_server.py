# Benchmark helper (not a test): the floor under bench/http.sh's servers. Answers the requests
# `sandcell serve` answers (GET /v1/health; POST /v1/run with {"code": ...}: the snippet's stdout
# and exit status as JSON) with no isolation at all: no namespaces, cgroup, seccomp or workspace,
# nothing prepared, nothing torn down. It runs chroot'd into the skill image (bench/http.sh) with
# the image's own python3, so the interpreter, its preloads and its files are the ones the
# sandboxes run. Two modes, one process each way a runner could start the snippet's process:
#
#   exec  a fresh interpreter per request (`python3 -c CODE`, as a cold run starts one);
#   fork  the preloads imported once here (numpy: the python skill's `preload`), then a fork of
#         this process per request that runs the snippet and exits (as a zygote's child does).
#
# What separates a sandcell server from these is then its isolation's whole cost, sandbox and
# refill included; and what these reach on a machine bounds what any runner that starts a process
# per request can reach there.
#
# usage: python3 floor_server.py PORT exec|fork [MODULE...]
import gc
import http.server
import json
import os
import subprocess
import sys

PORT, MODE, PRELOADS = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
if MODE not in ("exec", "fork"):
    sys.exit(f"floor_server.py: no mode called '{MODE}' (exec, fork)")
if MODE == "fork":
    for name in PRELOADS:
        __import__(name)
    gc.freeze()  # as the pool's interpreters do: the children's collections skip these objects


def read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            os.close(fd)
            return b"".join(chunks)
        chunks.append(chunk)


def run_forked(code):
    """The snippet in a fork of this process; returns (exit status, stdout, stderr)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            exec(compile(code, "main.py", "exec"), {"__name__": "__main__"})
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status & 0xFF)
    os.close(out_w)
    os.close(err_w)
    # Two pipes read one after the other: the snippets are small (a pipe holds 64 KiB).
    stdout, stderr = read_all(out_r), read_all(err_r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), stdout, stderr


def run_exec(code):
    done = subprocess.run([sys.executable, "-c", code], input=b"", capture_output=True,
                          check=False)  # input, not /dev/null: the image's /dev may be empty
    return done.returncode, done.stdout, done.stderr


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as ab -k asks
    # The headers and the body are two writes: with Nagle's algorithm the body waited for the
    # client's delayed ACK of the headers, 40 ms per request.
    disable_nagle_algorithm = True

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        # ab -k asks in HTTP/1.0 (Connection: Keep-Alive) and reads until a close unless told.
        self.send_header("Connection", "close" if self.close_connection else "keep-alive")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(200, {"status": "ok"} if self.path == "/v1/health" else {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        if self.path != "/v1/run" or not 0 < length <= 1 << 20:
            self.answer(400, {"error": "POST /v1/run with a JSON body"})
            return
        code = json.loads(self.rfile.read(length))["code"]
        exit_code, stdout, stderr = (run_forked if MODE == "fork" else run_exec)(code)
        self.answer(200, {"status": "ok" if exit_code == 0 else "error", "exit_code": exit_code,
                          "stdout": stdout.decode(errors="replace"),
                          "stderr": stderr.decode(errors="replace")})

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
