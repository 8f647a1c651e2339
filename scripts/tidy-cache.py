#!/usr/bin/env python3
"""A result cache for scripts/check-style.sh's clang-tidy run, as ccache is for the compiler.

A source file's key hashes everything its clang-tidy result depends on: the clang-tidy version and
.clang-tidy, the file's compile command (the checkout's path taken out, so that another clone of
the same commit hits the same entries), and every file the last build read to compile it (ninja's
dependency log): project files by content, system headers by path, size and modification time.
Only clean results are kept, so a finding is always reported again.

  tidy-cache.py check BUILD_DIR TOOL_VERSION FILE...   prints the files with no clean entry
  tidy-cache.py store BUILD_DIR TOOL_VERSION FILE...   records the files as clean
The cache lives in $FENCELOCK_TIDY_CACHE (default ~/.cache/fencelock-clang-tidy).
"""
import hashlib
import json
import os
import shlex
import subprocess
import sys


def dependencies(build_dir):
    """object path -> the files the last build read for it (ninja -t deps)."""
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True,
                         capture_output=True, text=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            current = line.split(":", 1)[0]
            deps[current] = [] if "(VALID)" in line else None
        elif current is not None and deps[current] is not None:
            deps[current].append(line.strip())
    return deps


def keys(root, build_dir, version, files):
    """file -> key, or None when the file cannot be keyed (run clang-tidy on it)."""
    entries = {}
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        for entry in json.load(f):
            entries[os.path.realpath(entry["file"])] = entry
    deps = dependencies(build_dir)
    with open(os.path.join(root, ".clang-tidy"), "rb") as f:
        config = f.read()
    result = {}
    for name in files:
        entry = entries.get(os.path.realpath(os.path.join(root, name)))
        args = shlex.split(entry["command"]) if entry else []
        obj = args[args.index("-o") + 1] if "-o" in args[:-1] else None
        read = deps.get(obj) if obj else None
        if read is None:
            result[name] = None
            continue
        h = hashlib.sha256()
        h.update(version.encode() + b"\0" + config + b"\0")
        h.update(entry["command"].replace(root, "@ROOT@").encode() + b"\0")
        for dep in read:
            path = os.path.normpath(os.path.join(entry["directory"], dep))
            try:
                if path.startswith(root + os.sep):
                    with open(path, "rb") as f:
                        h.update(os.path.relpath(path, root).encode() + b"\0" +
                                 hashlib.sha256(f.read()).digest())
                else:
                    st = os.stat(path)
                    h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
            except OSError:
                h = None
                break
        result[name] = h.hexdigest() if h else None
    return result


def main():
    mode, build_dir, version, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    root = os.path.realpath(os.getcwd())
    cache = os.environ.get("FENCELOCK_TIDY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fencelock-clang-tidy")
    os.makedirs(cache, exist_ok=True)
    for name, key in keys(root, os.path.realpath(build_dir), version, files).items():
        entry = os.path.join(cache, key) if key else None
        if mode == "check" and not (entry and os.path.exists(entry)):
            print(name)
        elif mode == "store" and entry:
            with open(entry, "w") as f:
                f.write(name + "\n")


if __name__ == "__main__":
    main()
