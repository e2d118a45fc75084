# Calls one syscall through ctypes, the way a Python program escapes its interpreter's API, and
# prints what the kernel answered. The test puts `NAME = "..."` above this line.
import ctypes
import errno

CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17
CALLS = {  # x86_64 numbers; arguments that would succeed if the syscall were allowed
    "unshare": (272, [CLONE_NEWUSER]),
    "clone": (56, [CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0]),
    "setns": (308, [0, 0]),
    "mount": (165, [b"none", b"/tmp", b"tmpfs", 0, 0]),
    "fsopen": (430, [b"tmpfs", 0]),
    "pivot_root": (155, [b"/tmp", b"/tmp"]),
    "chroot": (161, [b"/tmp"]),
    "keyctl": (250, [0, -3, 0, 0, 0]),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": (248, [b"user", b"k", b"x", 1, -4]),
    "bpf": (321, [0, 0, 0]),
    "perf_event_open": (298, [0, 0, -1, -1, 0]),
    "userfaultfd": (323, [0]),
    "io_uring_setup": (425, [1, 0]),
    "ptrace": (101, [0, 0, 0, 0]),  # PTRACE_TRACEME
    "process_vm_readv": (310, [1, 0, 0, 0, 0, 0]),
    "open_by_handle_at": (304, [0, 0, 0]),
    "kexec_load": (246, [0, 0, 0, 0]),
    "init_module": (175, [0, 0, b""]),
}

libc = ctypes.CDLL(None, use_errno=True)
number, raw = CALLS[NAME]  # noqa: F821 (set by the test)
args = [ctypes.c_char_p(a) if isinstance(a, bytes) else ctypes.c_long(a) for a in raw]
result = libc.syscall(ctypes.c_long(number), *args)
print(NAME, "errno=" + errno.errorcode[ctypes.get_errno()] if result == -1 else "succeeded")  # noqa: F821
