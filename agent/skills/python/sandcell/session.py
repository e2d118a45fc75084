"""Runs one call of a sandcell python session: /workspace/main.py with the variables the
previous calls of the same session left, like a notebook kernel.

The interpreter does not stay alive between calls (each call is a fresh sandbox); instead the
globals are saved to /workspace/.sandcell/python-globals.pkl after the code ran (also when it
raised) and loaded before the next call.

What survives: every global dill can serialise (numbers, strings, containers, numpy arrays,
pandas frames, functions and classes defined in the session), and imported modules (imported
again by name). What does not: open files, sockets, threads, generators, locks and anything
else dill refuses; their names are written to /workspace/.sandcell/lost-variables.txt and the
runner reports them.
"""
import importlib
import os
import sys
import traceback
import types

try:
    import dill as pickle
except ImportError:  # the skill image has python3-dill; plain pickle keeps less
    import pickle

STATE_DIR = "/workspace/.sandcell"
STATE = os.path.join(STATE_DIR, "python-globals.pkl")
LOST = os.path.join(STATE_DIR, "lost-variables.txt")


def restore(namespace):
    try:
        with open(STATE, "rb") as f:
            saved = pickle.load(f)
    except FileNotFoundError:
        return
    except Exception as e:  # a corrupt state must not make the session unusable
        print(f"sandcell: session variables could not be restored: {e!r}", file=sys.stderr)
        return
    for name, module in saved.get("modules", {}).items():
        try:
            namespace[name] = importlib.import_module(module)
        except Exception:
            pass
    namespace.update(saved.get("values", {}))


def save(namespace):
    values, modules, lost = {}, {}, []
    for name, value in list(namespace.items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            continue
        try:
            pickle.dumps(value)
            values[name] = value
        except Exception:
            lost.append(name)
    os.makedirs(STATE_DIR, exist_ok=True)
    tmp = STATE + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump({"modules": modules, "values": values}, f)
    os.replace(tmp, STATE)
    with open(LOST, "w") as f:
        f.write("".join(name + "\n" for name in lost))


def main(path):
    module = types.ModuleType("__main__")
    module.__file__ = path
    sys.modules["__main__"] = module  # dill keeps what __main__ defines by value
    namespace = module.__dict__
    restore(namespace)
    namespace.update({"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(path))
    with open(path, "rb") as f:
        source = f.read()
    status = 0
    try:
        exec(compile(source, path, "exec"), namespace)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException as e:
        # The traceback as python itself prints it, without this driver's frame.
        tb = e.__traceback__.tb_next if not isinstance(e, SyntaxError) else None
        traceback.print_exception(type(e), e, tb)
        status = 1
    finally:
        sys.stdout.flush()
        save(namespace)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
