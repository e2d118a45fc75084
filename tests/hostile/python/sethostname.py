import errno
import socket

try:
    socket.sethostname("host-owned")
    print("sethostname succeeded")
except OSError as e:
    print("sethostname", errno.errorcode[e.errno])
