# Children that never exit, until fork fails.
import errno
import os
import time

forked = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
except OSError as e:
    print("fork failed:", errno.errorcode[e.errno], flush=True)
    raise SystemExit(3)
