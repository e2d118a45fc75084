# kill(-1, SIGKILL) signals every process the caller may signal: inside the sandbox that is no
# one but itself (which kill(-1) skips), and only the program is visible in /proc.
import errno
import os
import signal

try:
    os.kill(-1, signal.SIGKILL)
    print("kill -1 delivered")
except OSError as e:
    print("kill -1", errno.errorcode[e.errno])
print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
