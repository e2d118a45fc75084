# Reads the files Docker masks. Each must be hidden: empty (masked), or absent where this kernel
# has no such file (/proc/kcore needs CONFIG_PROC_KCORE; sched_debug moved to debugfs in 5.13).
import errno
import os


def size(path):
    if os.path.isdir(path):
        return len(os.listdir(path))
    with open(path, "rb") as f:
        return len(f.read(1 << 20))


for path in ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/acpi", "/sys/firmware"]:
    try:
        n = size(path)
        print(path, "hidden" if n == 0 else "visible: %d" % n)
    except OSError as e:
        print(path, "hidden" if e.errno == errno.ENOENT else errno.errorcode[e.errno])
