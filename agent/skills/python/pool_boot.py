# The warm pool's bootstrap (docs/architecture.md, "The warm pool"), run as
# `python3 -c <this text> MODULE...` in a prepared sandbox: imports the skill's preloads, says
# "ready" with one NUL byte on stdout, waits for the go byte on stdin, then runs
# /workspace/main.py as `python3 /workspace/main.py` would. Not in the image (passed with -c), so
# changing it needs no rebuild. Everything lives in functions: their names are locals, and the
# globals it clears are __main__'s, which the code gets fresh.
#
# `python3 -c <this text> --zygote LIBRARY MODULE...`: the skill's zygote instead
# (docs/architecture.md, "The zygote"): imports the preloads once, then forks each pooled
# program into a sandbox the engine made for it, on requests from the pool's members
# (_sandcell_zygote).
def _sandcell_pool_run():
    import gc
    import os
    import sys

    del sys.path[0]  # '' (the cwd, /workspace): no preload may come from the workspace
    if sys.argv[1:2] == ["--zygote"]:
        return _sandcell_zygote(sys.argv[2], sys.argv[3:])
    for name in sys.argv[1:]:
        __import__(name)
    # What exists now (the interpreter's and the preloads' objects: ~100k with numpy) goes to the
    # collector's permanent generation, as a pre-forking server does: the exit's gc.collect()
    # below then looks at the program's objects only (8-20 ms less per pooled run), and so do the
    # program's own full collections. None of these objects is the program's garbage; what the
    # program can see of it is gc.get_freeze_count() (0 in a cold run).
    done = _sandcell_done_signal_caught()
    gc.freeze()
    _sandcell_run_when_told(done)


# __main__ and sys as `python3 /workspace/main.py` has them: the program's path, its namespace
# (__main__'s, emptied of this bootstrap's globals) and the exit function (_sandcell_exit).
def _sandcell_main():
    import importlib.machinery
    import sys

    path = "/workspace/main.py"
    sys.argv[:] = [path]
    sys.path.insert(0, "/workspace")
    namespace = sys.modules["__main__"].__dict__
    builtins = namespace["__builtins__"]
    finish = namespace["_sandcell_exit"]  # a global of __main__, cleared next
    namespace.clear()
    namespace.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None,
                     __annotations__={},
                     __loader__=importlib.machinery.SourceFileLoader("__main__", path),
                     __builtins__=builtins, __file__=path, __cached__=None)
    return path, namespace, finish


# Says "ready" (one NUL byte on stdout), waits for the go byte on stdin, runs /workspace/main.py.
# `main`: _sandcell_main's, made before (a zygote's, for all its children), else made here.
def _sandcell_run_when_told(done, main=None):
    import os
    import signal
    import sys

    # Before "ready": the program cannot run before the go byte, and this is then off the
    # request's way.
    path, namespace, finish = main or _sandcell_main()
    os.write(1, b"\0")
    if os.read(0, 1) != b"\0":  # the member cancelled (EOF): nothing to run
        os._exit(0)
    status = 0
    try:
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
        exec(code, namespace)
    except SystemExit as e:  # as the interpreter reports it, before the threads and atexit
        status = e.code
        if status is None:
            status = 0
        elif not isinstance(status, int):
            print(status, file=sys.stderr)
            status = 1
    except BaseException as e:  # printed as the interpreter would, without this frame
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        # The interpreter ends an uncaught KeyboardInterrupt by SIGINT, after its exit steps.
        status = -signal.SIGINT if isinstance(e, KeyboardInterrupt) else 1
    finish(status, namespace, done)


# The interpreter's exit as far as a program can observe it, then os._exit: the rest of
# Py_FinalizeEx (tearing down numpy's and every other module's state) takes 30-50 ms here and
# shows nothing. In the order Python exits: wait for the non-daemon threads, run the atexit
# functions, finalize the program's objects (an unclosed file is flushed as at a normal exit),
# flush the standard streams (a flush that fails exits 120, as Python's does).
def _sandcell_exit(status, namespace, done):
    import _signal
    import atexit
    import gc
    import os
    import signal
    import sys
    import threading

    threading._shutdown()
    atexit._run_exitfuncs()
    namespace.clear()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        if stream is None or stream.closed:
            continue
        try:
            stream.flush()
        except BaseException:
            status = status or 120
    if status == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    status &= 0xFF
    # Where the sandbox's init takes it (done, from _sandcell_done_signal_caught): the status goes
    # to the init instead of the exit, and this process waits, in a sleep that freezes at once.
    # The supervisor freezes the sandbox, answers, then kills it: the exit, which tears down an
    # address space with numpy in it (~3 ms here), is no longer on the way to the answer
    # (kProgramDoneSignal in runtime/include/sandcell/runtime/sandbox.hpp). Every signal is
    # blocked first, so none of the program's handlers runs meanwhile (_signal's own function:
    # signal's turns the old mask into enum members, ~0.1 ms).
    if done:
        try:
            number, sigqueue = done
            if sigqueue is None:
                import ctypes

                sigqueue = ctypes.CDLL(None, use_errno=True).sigqueue
            _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
            if sigqueue(1, number, status) == 0:  # sival_int: the low half of the union
                while True:
                    _signal.sigwait({_signal.SIGUSR1})
        except BaseException:  # the program broke what this needs: exit as before
            pass
    os._exit(status)


# The signal the sandbox's init takes a pooled program's exit status by, when it catches one (a
# pooled run whose cgroup can be frozen), and libc's sigqueue when the preloads imported ctypes
# already (numpy does; else it is looked up at the end, not to add a module the program would
# see in sys.modules); None when the init takes no such word.
def _sandcell_done_signal_caught(sigqueue=None):
    import os
    import signal
    import sys

    try:  # read as bytes: a text file's io stack costs a zygote's child ~1.5 ms of page faults
        fd = os.open("/proc/1/status", os.O_RDONLY | os.O_CLOEXEC)
        try:
            status = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
        start = status.index(b"\nSigCgt:") + 8
        caught = int(status[start:status.index(b"\n", start)], 16)
        if not caught >> (signal.SIGRTMAX - 1) & 1:
            return None
        ctypes = sys.modules.get("ctypes")
        if sigqueue is None and ctypes:
            sigqueue = ctypes.CDLL(None, use_errno=True).sigqueue
        return signal.SIGRTMAX, sigqueue
    except (OSError, ValueError, AttributeError):
        pass
    return None


# The skill's zygote (docs/architecture.md, "The zygote"), pid 2 of a sandbox of its own that
# keeps its capabilities in its user namespace. Imports the preloads once and says "ready"; then,
# per request of a pool member (a SOCK_SEQPACKET connection accepted on fd 0), forks a child into
# the member's sandbox, which that sandbox's engine made nested under this one's namespaces. The
# child joins and confines itself with LIBRARY (libsandcell-confine.so, bound read-only from
# sandcell's install), becomes pid 2 there with the program's stdio, and goes on as a pooled
# program (_sandcell_run_when_told). The zygote answers the child's pidfd, and once the child
# has exited its wait status. It runs none of a request's code.
#
# A request: 12 bytes (the plan's size, which of the sandbox's namespaces come: bit i for
# sandcell_confine_fds.namespace_fds[i], how many cgroup fds), then the plan; its fds, in order:
# the sandbox's pid namespace, stdin, stdout, stderr, the report socket, the namespaces, the
# cgroup files (sandcell/agent/zygote.hpp writes it).
def _sandcell_zygote(library, modules):
    import _thread
    import ctypes
    import gc
    import os
    import selectors
    import socket
    import struct
    import sys

    for name in modules:
        __import__(name)
    # What each child's way to the program imports, once here: a child importing `signal` (its
    # enums) spent ~8 ms of page faults and bytecode on it. The members' interpreters have them
    # too before their program.
    import _signal, atexit, importlib.machinery, signal, threading  # noqa: F401
    with open("/proc/self/status") as warm:  # the io stack's first text file
        warm.readline()
    libc = ctypes.CDLL(None, use_errno=True)
    confine = ctypes.CDLL(library).sandcell_confine
    confine.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]
    confine.restype = ctypes.c_int
    sigqueue = libc.sigqueue  # looked up once: in each child, a dlopen's page faults cost ~10 ms
    # glibc's fork, without CPython's after-fork work around it (os.fork's): that work re-makes
    # what another thread could have held at the fork (the GIL, the import lock, threading's
    # records of its threads) and runs the os.register_at_fork handlers: ~90 of the ~525 page
    # faults of a child that serves a `print(1)`, ~2 ms of CPU per request on this project's VM
    # (threading._after_fork most: its WeakSet of dangling threads). This process forks only
    # from its one thread, checked at each fork (fork_into), so every lock is as that thread
    # left it, and the one handler that is not about locks, `random`'s reseed, is done before
    # the fork instead. glibc's fork still runs pthread_atfork handlers (a preload's native
    # threads) and resets malloc's locks. The GIL is held across the call (PyDLL), as os.fork
    # holds it.
    glibc_fork = ctypes.PyDLL(None, use_errno=True).fork
    glibc_fork.restype = ctypes.c_int
    reseed_numpy = _sandcell_numpy_reseeder(sys.modules.get("numpy"))
    # What each child runs, taken before _sandcell_main empties __main__ (their globals); and
    # __main__ and sys as the program has them, made once here for all the children (a child
    # making them took ~45 page faults, 1-2 ms).
    child = _sandcell_zygote_child
    steps = (_sandcell_done_signal_caught, _sandcell_run_when_told)
    main = _sandcell_main()

    class Fds(ctypes.Structure):  # struct sandcell_confine_fds
        _fields_ = [("namespace_fds", ctypes.c_int32 * 6), ("cgroup_fds", ctypes.c_int32 * 8),
                    ("cgroup_count", ctypes.c_uint32), ("stdio", ctypes.c_int32 * 3),
                    ("report_fd", ctypes.c_int32), ("keep", ctypes.c_int32 * 8),
                    ("keep_count", ctypes.c_uint32)]

    clone_newpid = 0x20000000
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    listener = socket.socket(fileno=0)  # stays fd 0: the children take theirs from the library
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(1, b"\0")
    max_plan = 1 << 20
    max_fds = 5 + 6 + 8

    def fork_into(connection, header, plan, fds):
        plan_size, namespaces, cgroup_count = struct.unpack("=III", header)
        entry = Fds()
        next_fd = 5
        for i in range(6):
            entry.namespace_fds[i] = -1
            if namespaces >> i & 1:
                entry.namespace_fds[i] = fds[next_fd]
                next_fd += 1
        if plan_size != len(plan) or cgroup_count > 8 or len(fds) != next_fd + cgroup_count:
            raise ValueError("a malformed request")
        entry.cgroup_count = cgroup_count
        for i in range(cgroup_count):
            entry.cgroup_fds[i] = fds[next_fd + i]
        entry.stdio[0], entry.stdio[1], entry.stdio[2] = fds[1], fds[2], fds[3]
        entry.report_fd = fds[4]
        plan_buffer = ctypes.create_string_buffer(plan, len(plan))  # malloc's: 16-byte aligned
        # numpy's global generator and Python's `random` (whose reseed os.fork would do in the
        # child), reseeded here from fresh entropy for each child, which gets a state no sibling
        # had: cheaper here than in the child, whose every first touch is a page fault.
        if reseed_numpy is not None:
            reseed_numpy()
        random = sys.modules.get("random")
        if random is not None:
            random.seed()
        single_threaded = _thread._count() == 0  # no thread started from Python is alive
        if libc.setns(fds[0], clone_newpid) != 0:
            raise OSError(ctypes.get_errno(), "setns into the sandbox's pid namespace")
        pid = -1
        try:
            pid = glibc_fork() if single_threaded else os.fork()
            if pid < 0:
                raise OSError(ctypes.get_errno(), "fork")
        finally:
            if pid != 0:  # the zygote's next children are its own namespace's again
                libc.setns(own_pid_ns, clone_newpid)
        if pid == 0:
            child(confine, sigqueue, plan_buffer, entry, steps, main)
        return pid

    children = {}  # pidfd → (pid, the connection that asked)
    while True:
        for key, _ in selector.select():
            source = key.fileobj
            if source is listener:
                try:
                    connection, _ = listener.accept()
                except BlockingIOError:
                    continue
                selector.register(connection, selectors.EVENT_READ)
            elif isinstance(source, int):  # a child's pidfd: it has exited
                pid, connection = children.pop(source)
                selector.unregister(source)
                os.close(source)
                _, status = os.waitpid(pid, 0)
                try:
                    connection.send(struct.pack("=i", status))
                except OSError:
                    pass  # the member is gone
            else:
                try:
                    data, fds, flags, _ = socket.recv_fds(source, 12 + max_plan, max_fds)
                except OSError:
                    data, fds, flags = b"", [], 0
                if not data:
                    selector.unregister(source)
                    source.close()  # its children's statuses go nowhere; they are still reaped
                    continue
                try:
                    if len(data) < 12 or len(fds) < 5 or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                        raise ValueError("a malformed request")
                    pid = fork_into(source, data[:12], data[12:], fds)
                    pidfd = os.pidfd_open(pid)
                    children[pidfd] = (pid, source)
                    selector.register(pidfd, selectors.EVENT_READ)
                    socket.send_fds(source, [b"p"], [pidfd])
                except Exception as e:  # this request fails; the zygote serves the next
                    try:
                        source.send(b"e" + repr(e).encode()[:200])
                    except OSError:
                        pass
                finally:
                    for fd in fds:
                        os.close(fd)


# How the zygote gives numpy's global generator (the legacy RandomState behind numpy.random.*,
# an MT19937) a fresh state before each fork: the generator's state (624 words, then the
# position) filled from os.urandom through numpy's ctypes interface to it, the first word's top
# bit set (never all zeros, as numpy's own seeding) and the position at the end, so the next
# draw generates from the new words. numpy.random.seed() does the same from 128 bits of entropy
# through SeedSequence and its arrays, which write ~130 pages of numpy's shared with the live
# children (~2.4 ms of copy-on-write faults here per fork, against ~0.6). The layout is checked
# once, with a known state set through numpy's own set_state (which also clears the cached
# normal deviate: the zygote draws none after); where it does not hold, numpy.random.seed().
# None without numpy.
def _sandcell_numpy_reseeder(numpy):
    import ctypes
    import os

    if numpy is None:
        return None
    try:
        address = numpy.random.mtrand._rand._bit_generator.ctypes.state_address
        words = (ctypes.c_uint32 * 624).from_address(address)
        position = ctypes.c_int.from_address(address + ctypes.sizeof(words))
        numpy.random.set_state(("MT19937", numpy.arange(7, 631, dtype=numpy.uint32), 123))
        if list(words[:2]) != [7, 8] or words[623] != 630 or position.value != 123:
            raise ValueError("not numpy's MT19937 state layout")
    except Exception:
        numpy.random.seed()
        return numpy.random.seed
    size = ctypes.sizeof(words)

    def reseed():
        ctypes.memmove(address, os.urandom(size), size)
        words[0] |= 0x80000000
        position.value = 624

    reseed()
    return reseed


# The zygote's child, in the sandbox's pid namespace: confines itself (the library joins the
# sandbox's namespaces and cgroups and takes the program's stdio), then is a pooled program.
# What it shares with its siblings, being a copy of one process: the address layout and the
# `str` hash seed (the record says so); `random` and numpy's global generator are reseeded by
# the zygote just before the fork (fork_into).
def _sandcell_zygote_child(confine, sigqueue, plan_buffer, entry, steps, main):
    import ctypes
    import os

    done_signal_caught, run_when_told = steps
    try:
        step = ctypes.c_char_p()
        if confine(plan_buffer, ctypes.byref(entry), ctypes.byref(step)) != 0:
            os._exit(125)  # said over the report socket; the run records a runtime error
        done = done_signal_caught(sigqueue)
    except BaseException:
        os._exit(125)
    run_when_told(done, main)


_sandcell_pool_run()
