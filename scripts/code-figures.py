#!/usr/bin/env python3
"""Function- and file-length figures of sandcell's product code (not tests, benches or fixtures).

  scripts/code-figures.py [TREE]        TREE: a checkout (default: this one)
  scripts/code-figures.py --rev REV     the tree at a git revision (git archive into a temp dir)

Function extents come from universal-ctags (`--fields=+ne`: the line a definition starts and
ends on), so a function's length is end - start + 1, its signature and braces included. Prints
the median, p90 and maximum, how many are longer than 40 and 80 lines, and the longest ones; then
the same for files. Issue 33's before/after figures were made with it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PRODUCT = ["base", "runtime", "seccomp", "apparmor", "network", "rootfs-builder", "agent",
           "dockerapi", "oci", "cli"]
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".c")


def product_files(tree):
    for top in PRODUCT:
        for root, _dirs, files in os.walk(os.path.join(tree, top)):
            for name in files:
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(root, name)


def functions(tree, files):
    out = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+ne", "--kinds-C++=f", "--kinds-C=f",
         "--language-force=C++", "-f", "-"] + files,
        check=True, capture_output=True, text=True, cwd=tree).stdout
    for line in out.splitlines():
        tag = json.loads(line)
        if "end" in tag:
            yield os.path.relpath(tag["path"], tree), tag["name"], tag["end"] - tag["line"] + 1


def p90(values):
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def report(tree):
    files = sorted(product_files(tree))
    funcs = list(functions(tree, files))
    lengths = [n for _path, _name, n in funcs]
    print(f"functions: {len(lengths)}, median {statistics.median(lengths):.0f} lines, "
          f"p90 {p90(lengths):.0f}, max {max(lengths)}; "
          f"> 40 lines: {sum(n > 40 for n in lengths)}, > 80: {sum(n > 80 for n in lengths)}")
    for path, name, n in sorted(funcs, key=lambda f: -f[2])[:10]:
        print(f"  {n:4d}  {path}  {name}")
    sizes = []
    for path in files:
        with open(path, "rb") as f:
            sizes.append((os.path.relpath(path, tree), sum(1 for _ in f)))
    counts = [n for _p, n in sizes]
    print(f"files: {len(counts)}, median {statistics.median(counts):.0f} lines, "
          f"p90 {p90(counts):.0f}, max {max(counts)}; > 400 lines: {sum(n > 400 for n in counts)}")
    for path, n in sorted(sizes, key=lambda s: -s[1])[:10]:
        print(f"  {n:4d}  {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--rev", help="measure the tree at this git revision")
    args = parser.parse_args()
    if not args.rev:
        report(args.tree)
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", args.tree, "archive", args.rev], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        report(tmp)


if __name__ == "__main__":
    sys.exit(main())
