# Anonymous files hold memory without any mapping: still charged to the sandbox.
import os

fd = os.memfd_create("fill")
block = b"x" * (1 << 20)
while True:
    os.write(fd, block)
