# The warm pool's bootstrap (docs/architecture.md, "The warm pool"), run as
# `python3 -c <this text> MODULE...` in a prepared sandbox: imports the skill's preloads, says
# "ready" with one NUL byte on stdout, waits for the go byte on stdin, then runs
# /workspace/main.py as `python3 /workspace/main.py` would. Not in the image (passed with -c), so
# changing it needs no rebuild. Everything lives in one function: its names are locals, and the
# globals it clears are __main__'s, which the code gets fresh.
def _sandcell_pool_run():
    import gc
    import importlib.machinery
    import os
    import signal
    import sys

    del sys.path[0]  # '' (the cwd, /workspace): no preload may come from the workspace
    for name in sys.argv[1:]:
        __import__(name)
    # What exists now (the interpreter's and the preloads' objects: ~100k with numpy) goes to the
    # collector's permanent generation, as a pre-forking server does: the exit's gc.collect()
    # below then looks at the program's objects only (8-20 ms less per pooled run), and so do the
    # program's own full collections. None of these objects is the program's garbage; what the
    # program can see of it is gc.get_freeze_count() (0 in a cold run).
    done = _sandcell_done_signal_caught()
    gc.freeze()
    os.write(1, b"\0")
    if os.read(0, 1) != b"\0":  # the member cancelled (EOF): nothing to run
        os._exit(0)

    path = "/workspace/main.py"
    sys.argv[:] = [path]
    sys.path.insert(0, "/workspace")
    namespace = sys.modules["__main__"].__dict__
    builtins = namespace["__builtins__"]
    finish = namespace["_sandcell_exit"]  # a global of __main__, cleared next
    namespace.clear()
    namespace.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None,
                     __loader__=importlib.machinery.SourceFileLoader("__main__", path),
                     __builtins__=builtins, __file__=path, __cached__=None)
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
def _sandcell_done_signal_caught():
    import signal
    import sys

    try:
        with open("/proc/1/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    if not int(line.split()[1], 16) >> (signal.SIGRTMAX - 1) & 1:
                        return None
                    ctypes = sys.modules.get("ctypes")
                    sigqueue = ctypes.CDLL(None, use_errno=True).sigqueue if ctypes else None
                    return signal.SIGRTMAX, sigqueue
    except (OSError, ValueError, AttributeError):
        pass
    return None


_sandcell_pool_run()
