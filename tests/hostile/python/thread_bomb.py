import threading
import time

try:
    while True:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
except RuntimeError as e:
    print("thread failed:", e, flush=True)
    raise SystemExit(4)
