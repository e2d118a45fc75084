"""bench/pool.sh's client: N sequential `print(1)` requests on one keep-alive connection to
`sandcell serve`; prints one Markdown row: label, count, how many were pooled, median, p90 (ms)."""
import http.client
import json
import statistics
import sys
import time

port, token, n, pace, label = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
body = json.dumps({"skill": "python", "code": "print(1)"})
for _ in range(500):  # the server starts
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/v1/health")
        c.getresponse().read()
        break
    except OSError:
        time.sleep(0.02)
time.sleep(3)  # the pool fills (it is also what an idle server would have done)
times, pooled = [], 0
for _ in range(n):
    start = time.perf_counter()
    c.request("POST", "/v1/run", body, headers)
    result = json.loads(c.getresponse().read())
    times.append((time.perf_counter() - start) * 1000)
    assert result["status"] == "ok" and result["stdout"] == "1\n", result
    pooled += bool(result["report"].get("pooled"))
    if pace:
        time.sleep(pace)
times.sort()
print(f"| {label} | {n} | {pooled} | {statistics.median(times):.1f} | {times[int(len(times) * 0.9)]:.1f} |")
