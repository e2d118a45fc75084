# Opens one kind of socket through Python's socket module; the test puts `NAME = "..."` first.
import errno
import socket

KINDS = {  # family, type, protocol
    "packet": (17, socket.SOCK_RAW, 0x0300),            # AF_PACKET, ETH_P_ALL: sniffing
    "raw": (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    "netlink_audit": (16, socket.SOCK_RAW, 9),          # NETLINK_AUDIT
    "vsock": (40, socket.SOCK_STREAM, 0),               # AF_VSOCK: the hypervisor
    "alg": (38, socket.SOCK_SEQPACKET, 0),              # AF_ALG: the kernel crypto API
}
try:
    socket.socket(*KINDS[NAME]).close()  # noqa: F821 (set by the test)
    print(NAME, "created")  # noqa: F821
except OSError as e:
    print(NAME, "errno=" + errno.errorcode[e.errno])  # noqa: F821
