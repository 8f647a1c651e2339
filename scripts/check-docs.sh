#!/usr/bin/env bash
# The docs gate of the test command: the code users copy from README.md and docs/*.md must work.
#   - Every ```cpp block is compiled against the SDK's headers (g++ -std=c++20, warnings are
#     errors). A block is a whole program unless the line before it is
#       <!-- cpp-fragment: PARAMS -->
#     which makes it a function body: it is compiled as `void doc_block(PARAMS) { BLOCK }`, its
#     #include lines hoisted above, after scripts/check-docs-prelude.h (the SDK headers and the
#     application stand-ins the examples call, like more_work() or Store). PARAMS may be empty.
#   - With --build-dir, whole programs are also linked against the SDK libraries built there.
#   - With --endpoint URL (a live fencelockd, e.g. the quickstart's), every ```sh block whose
#     previous line is <!-- runnable --> is run with bash -euo pipefail, `fencelock` from the build
#     dir first on PATH, in a scratch directory, bounded to 60 s. The docs show the quickstart's
#     address (127.0.0.1:7080 or localhost:7080); it is rewritten to URL's host:port.
# Exits non-zero and names each failing block (file:line) otherwise.
#   scripts/check-docs.sh [--build-dir build/release] [--endpoint http://127.0.0.1:17080]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

build_dir=""
endpoint=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$(cd "$2" && pwd); shift ;;
    --endpoint) endpoint=$2; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "check-docs: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$endpoint" ] && [ -z "$build_dir" ]; then
  echo "check-docs: --endpoint needs --build-dir (where the fencelock CLI is)" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-check-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Extraction: one file per block (block-N.cpp / block-N.sh) and a manifest "N kind file:line".
python3 - "$work" README.md docs/*.md <<'EOF'
import re, sys
out, files = sys.argv[1], sys.argv[2:]
n = 0
manifest = []
for path in files:
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```(\w+)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        indent, lang = fence.group(1), fence.group(2)
        start = i + 1
        j = start
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l for l in lines[start:j]]
        marker = lines[i - 1].strip() if i > 0 else ""
        where = f"{path}:{i + 1}"
        if lang == "cpp":
            n += 1
            frag = re.match(r"^<!--\s*cpp-fragment:(.*?)-->$", marker)
            if frag:
                includes = [l for l in body if l.startswith("#include")]
                rest = ["" if l.startswith("#include") else l for l in body]  # keeps line numbers
                text = ('#include "check-docs-prelude.h"\n' + "\n".join(includes) +
                        f"\n\nvoid doc_block({frag.group(1).strip()}) {{\n#line {start + 1} \"{path}\"\n" +
                        "\n".join(rest) + "\n}\n")
                kind = "fragment"
            else:
                text = f"#line {start + 1} \"{path}\"\n" + "\n".join(body) + "\n"
                kind = "program"
            open(f"{out}/block-{n}.cpp", "w").write(text)
            manifest.append(f"{n} {kind} {where}")
        elif lang == "sh" and marker == "<!-- runnable -->":
            n += 1
            open(f"{out}/block-{n}.sh", "w").write("\n".join(body) + "\n")
            manifest.append(f"{n} runnable {where}")
        i = j + 1
open(f"{out}/manifest", "w").write("\n".join(manifest) + "\n")
EOF

cxx=(g++ -std=c++20 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-unused-variable
     -Wno-unused-but-set-variable -I"$root/scripts" -I"$root/client-sdk/include" -I"$root/protocol/include")
libs=()
if [ -n "$build_dir" ]; then
  for lib in client-sdk/libfencelock_fenced_table.a client-sdk/libfencelock_client.a protocol/libfencelock_protocol.a; do
    [ -f "$build_dir/$lib" ] || { echo "check-docs: $build_dir/$lib is missing: build first" >&2; exit 1; }
    libs+=("$build_dir/$lib")
  done
  libs+=(-lssl -lcrypto -lsqlite3 -lpq -pthread)
fi
host_port=""
if [ -n "$endpoint" ]; then
  host_port=${endpoint#*://}
  host_port=${host_port%%/*}
fi

status=0
compiled=0
ran=0
while read -r n kind where; do
  [ -n "$n" ] || continue
  case "$kind" in
    program|fragment)
      if ! "${cxx[@]}" -c "$work/block-$n.cpp" -o "$work/block-$n.o" 2>"$work/block-$n.log"; then
        echo "check-docs: the C++ block at $where does not compile:" >&2
        head -n 30 "$work/block-$n.log" >&2
        status=1
        continue
      fi
      if [ "$kind" = program ] && [ ${#libs[@]} -gt 0 ] &&
         ! g++ "$work/block-$n.o" "${libs[@]}" -o "$work/block-$n" 2>"$work/block-$n.log"; then
        echo "check-docs: the C++ program at $where does not link against the SDK:" >&2
        head -n 30 "$work/block-$n.log" >&2
        status=1
        continue
      fi
      compiled=$((compiled + 1))
      ;;
    runnable)
      [ -n "$endpoint" ] || continue
      sed -i -e "s#127\.0\.0\.1:7080#$host_port#g" -e "s#localhost:7080#$host_port#g" "$work/block-$n.sh"
      mkdir -p "$work/run-$n"
      if ! (cd "$work/run-$n" && PATH="$build_dir/client-sdk:$PATH" \
              timeout 60 bash -euo pipefail "$work/block-$n.sh") >"$work/block-$n.log" 2>&1; then
        echo "check-docs: the runnable shell block at $where failed:" >&2
        tail -n 30 "$work/block-$n.log" >&2
        status=1
        continue
      fi
      ran=$((ran + 1))
      ;;
  esac
done <"$work/manifest"

echo "check-docs: $compiled C++ blocks compiled, $ran shell blocks run"
exit "$status"
