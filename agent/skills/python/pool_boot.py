# The warm pool's bootstrap (docs/architecture.md, "The warm pool"), run as
# `python3 -c <this text> MODULE...` in a prepared sandbox: imports the skill's preloads, says
# "ready" with one NUL byte on stdout, waits for the go byte on stdin, then runs
# /workspace/main.py as `python3 /workspace/main.py` would. Not in the image (passed with -c), so
# changing it needs no rebuild. Everything lives in one function: its names are locals, and the
# globals it clears are __main__'s, which the code gets fresh.
def _sandcell_pool_run():
    import importlib.machinery
    import os
    import signal
    import sys

    del sys.path[0]  # '' (the cwd, /workspace): no preload may come from the workspace
    for name in sys.argv[1:]:
        __import__(name)
    os.write(1, b"\0")
    if os.read(0, 1) != b"\0":  # the member cancelled (EOF): nothing to run
        os._exit(0)

    path = "/workspace/main.py"
    sys.argv[:] = [path]
    sys.path.insert(0, "/workspace")
    namespace = sys.modules["__main__"].__dict__
    builtins = namespace["__builtins__"]
    namespace.clear()
    namespace.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None,
                     __loader__=importlib.machinery.SourceFileLoader("__main__", path),
                     __builtins__=builtins, __file__=path, __cached__=None)
    try:
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as e:  # printed as the interpreter would, without this frame
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        if isinstance(e, KeyboardInterrupt):
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        sys.exit(1)


_sandcell_pool_run()
