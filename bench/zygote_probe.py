#!/usr/bin/env python3
"""Probe (not a test, not a benchmark of sandcell): the kernel mechanics of a zygote that forks
its children into sandboxes made beforehand ("design B" in docs/architecture.md, "Next: a
zygote"), and what each step costs on this host.

Three parties, as sandcell would have them:
  Z  the zygote: an interpreter (this script, forked) in a user namespace U_Z (root mapped to an
     unprivileged host range), a pid namespace P_Z and mount, uts, ipc and network namespaces of
     its own. It keeps its capabilities in U_Z.
  R  a request's sandbox, made by the supervisor (host root): its init is cloned in fresh user,
     pid, mount, uts, ipc, network and cgroup namespaces NESTED under U_Z and P_Z, so that Z holds
     capabilities over them. The init stays the supervisor's child (CLONE_PARENT).
  H  the request's process: Z points its pid_ns_for_children at R's pid namespace (setns), forks
     H there, points it back; H joins R's other namespaces (setns with R's init's pidfd).

Checks (each prints ok or FAIL) and times (medians over --rounds):
  - R's init: pid 1 of its namespace, the supervisor's child, three pid levels (host, P_Z, R);
  - H: pid 2 in R, parent outside R (getppid() 0), R's hostname and id map;
  - an orphan of H is reparented to R's init, not to Z;
  - Z's fork into R, and H's setns of six namespaces;
  - H's process-level steps, as sandcell's child takes them after "go" (step 4), from the
    interpreter through ctypes: a session of its own, the bounding set emptied, an unprivileged
    user of R, no capabilities, no_new_privs, a Landlock domain, a seccomp filter of ~1000
    instructions (the size of sandcell's `code` program), fds closed, cwd, umask, signals; then
    what /proc/self/status says of it, and their time.

Root only. Everything it makes is namespaces of its own processes, which it kills (by pid) and
reaps before it exits: no mount, cgroup, veth or file is left.

usage: sudo bench/zygote_probe.py [--rounds N]
"""
import argparse
import ctypes
import os
import signal
import socket
import statistics
import struct
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
CLONE_PARENT = 0x00008000
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
SYS_capset = 126
SYS_seccomp = 317
SYS_landlock_create_ruleset = 444
SYS_landlock_add_rule = 445
SYS_landlock_restrict_self = 446
SECCOMP_SET_MODE_FILTER = 1
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_ACCESS_FS_ALL_V1 = (1 << 13) - 1  # execute .. make_sym: what ABI 1 handles
H_UID = 1000  # the request's user inside R (R maps 0-65535)
SYS_clone = 56
Z_HOST_BASE = 200000  # U_Z's root is this host uid/gid; unprivileged, 65536 ids
REST = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWCGROUP


def check(result, what):
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def setns(fd, flags):
    check(libc.setns(fd, flags), f"setns {flags:#x}")


def raw_clone(flags):
    # A fork with namespace flags; the child goes on in this interpreter, as after os.fork (this
    # process is single-threaded, which setns into a user namespace requires anyway).
    return check(libc.syscall(SYS_clone, ctypes.c_ulong(flags | signal.SIGCHLD), 0, 0, 0, 0), "clone")


def host_pid(pidfd):
    # /proc/self/fdinfo of a pidfd names its process in the pid namespace of this /proc: the host's.
    with open(f"/proc/self/fdinfo/{pidfd}") as info:
        for line in info:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    raise OSError("no Pid: in a pidfd's fdinfo")


def write_id_maps(pid, inside, outside, count):
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w") as f:
            f.write(f"{inside} {outside} {count}")


def start_zygote(channel, mine):
    """Forks Z in namespaces of its own, `channel` its end of the socket pair; returns its host pid."""
    unshared_r, unshared_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    launcher = os.fork()
    if launcher == 0:
        check(libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET),
              "unshare for Z")
        os.write(unshared_w, b"u")
        os.read(mapped_r, 1)
        os.setgroups([])
        os.setresgid(0, 0, 0)
        os.setresuid(0, 0, 0)
        mine.close()
        zygote = os.fork()  # pid 1 of P_Z
        if zygote == 0:
            run_zygote(channel)
        os._exit(0)
    os.read(unshared_r, 1)
    write_id_maps(launcher, 0, Z_HOST_BASE, 65536)
    os.write(mapped_w, b"m")
    for fd in (unshared_r, unshared_w, mapped_r, mapped_w):
        os.close(fd)
    os.waitpid(launcher, 0)
    channel.close()
    pid, _ = struct.unpack("ii", mine.recv(8))
    return pid


def run_zygote(channel):
    try:
        channel.sendall(struct.pack("ii", host_pid(os.pidfd_open(os.getpid())), 0))
        own = os.pidfd_open(os.getpid())
        while True:
            message, fds, _, _ = socket.recv_fds(channel, 16, 2)
            if not fds:
                os._exit(0)
            init_fd, report_fd = fds
            start = time.perf_counter()
            setns(init_fd, CLONE_NEWPID)  # this process's next child is born in R's pid namespace
            child = os.fork()
            if child == 0:
                run_request_process(init_fd, report_fd)
            setns(own, CLONE_NEWPID)  # back: the next child is Z's own again
            fork_ms = (time.perf_counter() - start) * 1e3
            _, status = os.waitpid(child, 0)
            channel.sendall(struct.pack("di", fork_ms, os.waitstatus_to_exitcode(status)))
            os.close(init_fd)
            os.close(report_fd)
    except BaseException as e:
        print(f"zygote: {e!r}", file=sys.stderr)
        os._exit(1)


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def seccomp_program(pairs=500):
    """A filter the size of sandcell's `code` program (~1000 instructions): the syscall number
    compared with `pairs` numbers no syscall has (each a jump over an errno return), then allow."""
    BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
    SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
    code = [(BPF_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    for i in range(pairs):
        code += [(BPF_JEQ_K, 0, 1, 100000 + i), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | 1)]
    code.append((BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    filters = (SockFilter * len(code))(*[SockFilter(*c) for c in code])
    return SockFprog(len(code), filters), filters


def confine(keep_fd, program):
    """Step 4: what sandcell's child does between "go" and the program, here from Python."""
    os.setsid()  # until now H shares Z's process group, which kill(0) would reach
    last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last_cap + 1):
        check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap} from the bounding set")
    os.setgroups([])
    os.setresgid(H_UID, H_UID, H_UID)
    os.setresuid(H_UID, H_UID, H_UID)  # permitted and effective capabilities go with uid 0
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    check(libc.syscall(SYS_capset, header, data), "capset: none")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    attr = ctypes.c_uint64(LANDLOCK_ACCESS_FS_ALL_V1)
    ruleset = check(libc.syscall(SYS_landlock_create_ruleset, ctypes.byref(attr), ctypes.c_size_t(8), 0),
                    "landlock_create_ruleset")
    root = os.open("/", os.O_PATH | os.O_CLOEXEC)
    beneath = struct.pack("=Qi", LANDLOCK_ACCESS_FS_ALL_V1, root)  # packed, as the kernel's struct
    check(libc.syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, beneath, 0),
          "landlock_add_rule")
    check(libc.syscall(SYS_landlock_restrict_self, ruleset, 0), "landlock_restrict_self")
    os.close(root)
    os.close(ruleset)
    check(libc.syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(program)), "seccomp")
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, 65536)
    os.chdir("/")
    os.umask(0o022)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)


def status_fields(*names):
    with open("/proc/self/status") as status:
        fields = dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)
    return {name: fields.get(name, "?").strip() for name in names}


def run_request_process(init_fd, report_fd):
    report = {}
    try:
        start = time.perf_counter()
        setns(init_fd, REST)
        report["setns_ms"] = (time.perf_counter() - start) * 1e3
        report["pid"] = os.getpid()
        report["ppid"] = os.getppid()
        report["hostname"] = os.uname().nodename
        with open("/proc/self/uid_map") as f:
            report["uid_map"] = f.read().split()
        orphan = os.fork()  # left behind: whose child does it become?
        if orphan == 0:
            time.sleep(0.05)
            os.write(report_fd, f"orphan_ppid={os.getppid()}\n".encode())
            os._exit(0)
        report["orphan"] = orphan
        program, keep = seccomp_program()
        start = time.perf_counter()
        confine(report_fd, program)
        report["confine_ms"] = (time.perf_counter() - start) * 1e3
        report["status"] = status_fields("Uid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp")
        report["sid"] = os.getsid(0) == os.getpid()
    except BaseException as e:
        report["error"] = repr(e)
    os.write(report_fd, (repr(report) + "\n").encode())
    os._exit(7)


def make_request_sandbox(zygote_pid):
    """Clones R's init under U_Z and P_Z as this process's child; returns (host pid, pidfd)."""
    zfd = os.pidfd_open(zygote_pid)
    mapped_r, mapped_w = os.pipe()
    ready_r, ready_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        try:
            # Into Z's user namespace (host root holds every capability there) with an id it maps:
            # a user namespace is made only by an id its parent maps. Dumpable again after
            # setresuid, so that /proc/PID/uid_map of the init is this id's to write.
            setns(zfd, CLONE_NEWUSER | CLONE_NEWPID)
            os.setgroups([])
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            # After setns(CLONE_NEWPID) a clone with CLONE_NEWPID is EINVAL until a fork: one more
            # process, in P_Z, whose clone makes the init; CLONE_PARENT twice keeps both children
            # of the supervisor.
            if raw_clone(CLONE_PARENT) != 0:
                os._exit(0)
            init = raw_clone(CLONE_PARENT | CLONE_NEWPID | REST)
            if init == 0:
                os.read(mapped_r, 1)
                check(libc.sethostname(b"request", 7), "sethostname")
                os.write(ready_w, b"r")
                while True:  # an init's loop: reap whatever is reparented here
                    try:
                        os.wait()
                    except ChildProcessError:
                        time.sleep(0.01)
            write_id_maps(host_pid(os.pidfd_open(init)), 0, 0, 65536)  # in U_Z's ids
            os.write(mapped_w, b"m")
        except BaseException as e:
            print(f"making R: {e!r}", file=sys.stderr)
            os._exit(1)
        os._exit(0)
    os.waitpid(helper, 0)
    os.close(ready_w)
    if os.read(ready_r, 1) != b"r":
        raise OSError("R's init did not start")
    init = None
    with open(f"/proc/self/task/{os.getpid()}/children") as f:
        children = [int(p) for p in f.read().split()]
    levels = {}
    for pid in children:
        with open(f"/proc/{pid}/status") as status:
            ns_pids = next(l for l in status if l.startswith("NSpid:")).split()[1:]
        levels[pid] = ns_pids
        if len(ns_pids) == 3:
            init = pid
        else:
            os.waitpid(pid, 0)  # the one in between
    for fd in (mapped_r, mapped_w, ready_r, zfd):
        os.close(fd)
    return init, os.pidfd_open(init), levels.get(init)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/zygote_probe.py: run as root")
    mine, zygotes = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zygote = start_zygote(zygotes, mine)
    failures = 0

    def expect(ok, what):
        nonlocal failures
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")

    fork_ms, setns_ms, confine_ms = [], [], []
    try:
        for round_ in range(args.rounds):
            init, init_fd, levels = make_request_sandbox(zygote)
            report_r, report_w = os.pipe()
            socket.send_fds(mine, [b"f"], [init_fd, report_w])
            os.close(report_w)
            fork, status = struct.unpack("di", mine.recv(16))
            with os.fdopen(report_r) as reports:
                lines = reports.read().splitlines()
            report = eval(next(l for l in lines if l.startswith("{")))  # our own repr
            orphan_ppid = next((l for l in lines if l.startswith("orphan_ppid=")), "orphan_ppid=?")
            if "error" in report:
                expect(False, f"the request process: {report['error']}")
                break
            fork_ms.append(fork)
            setns_ms.append(report["setns_ms"])
            confine_ms.append(report["confine_ms"])
            if round_ == 0:
                expect(levels is not None and levels[-1] == "1",
                       f"R's init: the supervisor's child, pid 1 of its namespace (NSpid {levels})")
                expect(report["pid"] == 2 and report["ppid"] == 0,
                       f"H: pid {report['pid']} in R, parent outside R (getppid {report['ppid']})")
                expect(report["hostname"] == "request", f"H: R's hostname ({report['hostname']})")
                expect(report["uid_map"] == ["0", "0", "65536"], f"H: R's id map, in U_Z's ids ({report['uid_map']})")
                expect(orphan_ppid == "orphan_ppid=1", f"an orphan of H goes to R's init ({orphan_ppid})")
                expect(status == 7, f"Z reaps H and has its status ({status})")
                st = report["status"]
                zero = "0000000000000000"
                expect(st["Uid"].split() == [str(H_UID)] * 4 and report["sid"],
                       f"H: an unprivileged user of R in a session of its own (Uid {st['Uid']})")
                expect(st["CapEff"] == st["CapPrm"] == st["CapBnd"] == zero,
                       f"H: no capabilities, none to regain (CapEff {st['CapEff']}, CapBnd {st['CapBnd']})")
                expect(st["NoNewPrivs"] == "1" and st["Seccomp"] == "2",
                       f"H: no_new_privs and a seccomp filter (NoNewPrivs {st['NoNewPrivs']}, Seccomp {st['Seccomp']})")
            os.kill(init, signal.SIGKILL)
            os.waitpid(init, 0)
            os.close(init_fd)
    finally:
        mine.close()  # Z reads EOF and exits; kill it anyway
        try:
            os.kill(zygote, signal.SIGKILL)
        except ProcessLookupError:
            pass
        # Z is not this process's child (its launcher was): wait for it to be gone by its pidfd.
        try:
            zfd = os.pidfd_open(zygote)
            import select
            select.select([zfd], [], [], 5)
            os.close(zfd)
        except ProcessLookupError:
            pass
    if fork_ms:
        print(f"Z's fork into R's pid namespace (setns there and back, fork): median "
              f"{statistics.median(fork_ms):.3f} ms over {len(fork_ms)}")
        print(f"H's setns into R's user, mount, uts, ipc, network and cgroup namespaces: median "
              f"{statistics.median(setns_ms):.3f} ms")
        print(f"H's process-level steps (session, bounding set, user, capabilities, no_new_privs, "
              f"Landlock, a ~1000-instruction seccomp filter, fds): median {statistics.median(confine_ms):.3f} ms")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
