#!/usr/bin/env python3
"""Fails when a library uses a library it must not (docs/architecture.md, "Libraries").

Usage: check-library-arrows.py TREE [ARROWS]   (ARROWS: TREE/scripts/library-arrows.txt)

What counts as a use, in each library's folder:
  - an #include of <sandcell/HEADERS/...> or "sandcell/HEADERS/..." in a .cpp/.hpp/.h/.c file;
  - a sandcell_* target named in target_link_libraries(...) in a CMakeLists.txt;
  - a ${PROJECT_SOURCE_DIR}/FOLDER/ path in target_include_directories(...) (another library's
    headers without its target).
A library may use itself and what its USES column lists; the arrows must not form a cycle.
Files outside every library's folder (tests/, bench/, scripts/) are not checked.
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".c", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]sandcell/([A-Za-z0-9_]+)/', re.M)
CMAKE_CALL = re.compile(r"\b(target_link_libraries|target_include_directories)\s*\(([^)]*)\)", re.S)
TARGET = re.compile(r"\bsandcell_[A-Za-z0-9_]+")
SOURCE_DIR = re.compile(r"\$\{(?:PROJECT|CMAKE)_SOURCE_DIR\}/([A-Za-z0-9_./-]+)")


class Library:
    def __init__(self, name, folder, headers, targets, uses):
        self.name, self.folder, self.headers = name, folder, headers
        self.targets = set(targets)
        self.uses = set(uses)


def read_arrows(path):
    libraries = {}
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) != 5:
            sys.exit(f"{path}:{number}: expected NAME FOLDER HEADERS TARGETS USES")
        name, folder, headers, targets, uses = line
        split = lambda text: [] if text == "-" else text.split(",")
        libraries[name] = Library(name, folder.rstrip("/"), None if headers == "-" else headers,
                                  split(targets), split(uses))
    for library in libraries.values():
        for used in library.uses:
            if used not in libraries:
                sys.exit(f"{path}: {library.name} uses {used}, which is not a library listed there")
    return libraries


def cycle(libraries):
    """A list of library names forming a cycle of allowed arrows, or None."""
    state = {}

    def visit(name, path):
        state[name] = "open"
        for used in sorted(libraries[name].uses):
            if state.get(used) == "open":
                return path[path.index(used):] + [used] if used in path else [name, used]
            if used not in state:
                found = visit(used, path + [used])
                if found:
                    return found
        state[name] = "done"
        return None

    for name in sorted(libraries):
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def owner(libraries, relative):
    best = None
    for library in libraries.values():
        if relative == library.folder or relative.startswith(library.folder + "/"):
            if best is None or len(library.folder) > len(best.folder):
                best = library
    return best


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    tree = os.path.abspath(sys.argv[1])
    arrows = sys.argv[2] if len(sys.argv) == 3 else os.path.join(tree, "scripts", "library-arrows.txt")
    libraries = read_arrows(arrows)
    by_headers = {l.headers: l for l in libraries.values() if l.headers}
    by_target = {t: l for l in libraries.values() for t in l.targets}
    problems = []

    found = cycle(libraries)
    if found:
        problems.append(f"{arrows}: the allowed arrows form a cycle: {' -> '.join(found)}")

    def use(library, used, where, what):
        if used is not library and used.name not in library.uses:
            problems.append(f"{where}: {library.name} must not use {used.name} ({what})")

    for directory, subdirectories, files in os.walk(tree):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d != "build")
        for file in sorted(files):
            path = os.path.join(directory, file)
            relative = os.path.relpath(path, tree)
            library = owner(libraries, relative)
            if library is None:
                continue
            if file.endswith(SOURCE_SUFFIXES):
                text = open(path, encoding="utf-8", errors="replace").read()
                for match in INCLUDE.finditer(text):
                    line = text.count("\n", 0, match.start()) + 1
                    headers = match.group(1)
                    used = by_headers.get(headers)
                    if used is None:
                        problems.append(f"{relative}:{line}: sandcell/{headers}/ is no library's headers")
                    else:
                        use(library, used, f"{relative}:{line}", f"includes sandcell/{headers}/")
            elif file == "CMakeLists.txt":
                text = open(path, encoding="utf-8").read()
                for call in CMAKE_CALL.finditer(text):
                    line = text.count("\n", 0, call.start()) + 1
                    arguments = call.group(2).split()
                    if call.group(1) == "target_link_libraries":
                        for target in TARGET.findall(" ".join(arguments[1:])):
                            if target.startswith("sandcell_dep_"):
                                continue  # the C libraries (top-level CMakeLists.txt)
                            used = by_target.get(target)
                            if used is None:
                                problems.append(f"{relative}:{line}: links {target}, no library's target")
                            else:
                                use(library, used, f"{relative}:{line}", f"links {target}")
                    else:
                        for folder in SOURCE_DIR.findall(" ".join(arguments[1:])):
                            used = owner(libraries, folder.rstrip("/"))
                            if used is not None:
                                use(library, used, f"{relative}:{line}", f"includes from {folder}")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-library-arrows: {len(problems)} forbidden uses (allowed: {arrows})")
        return 1
    print(f"check-library-arrows: {len(libraries)} libraries, every use allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
