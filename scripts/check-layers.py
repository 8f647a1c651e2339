#!/usr/bin/env python3
"""The include directions of docs/architecture.md ("Layers"), checked: every #include of the
project's C++ files against the rules below. Part of scripts/check-style.sh. Prints each include
that breaks a rule (file:line, the include, the rule) and exits 1; exits 0 when none does.

    scripts/check-layers.py
"""
import re
import subprocess
import sys

# (files the rule is about, includes they must not have, why). Paths are relative to the root;
# includes are matched against the text between the quotes or angle brackets.
RULES = [
    (r"^protocol/", r"^(fencelock/(storage|client|lease|lease_keeper|lock_guard|fenced_table)"
     r"[/.]|boost/|nlohmann/|hiredis/|sqlite3|libpq)",
     "protocol is the shared vocabulary: no other layer, no Boost, no JSON, no I/O"),
    (r"^storage/", r"^(api|http|auth|ops|app)/|^fencelock/(client|lease_keeper|lock_guard|"
     r"fenced_table)\.h$",
     "storage never includes the service or the SDK"),
    (r"^storage/src/(redis|net)/", r"^(engine|tokens)/",
     "the Redis transport is below the engine and the token sources"),
    (r"^storage/src/(redis|net|tokens)/|^storage/include/fencelock/storage/"
     r"(\w+_)?token_source\.h$|^storage/include/fencelock/storage/node_address\.h$",
     r"^fencelock/storage/(engine_options|engine_observer|failpoints|lease|lease_secret|"
     r"lease_timing|lock_engine|quorum|redlock_engine)\.h$",
     "the transport and the token sources use the shared vocabulary (node_address.h, result.h, "
     "fencelock/random_hex.h), never the engine's public headers"),
    (r"^storage/src/engine/", r"^tokens/", "engine and tokens never include each other"),
    (r"^storage/src/tokens/", r"^engine/", "engine and tokens never include each other"),
    (r"^client-sdk/", r"^fencelock/storage/|^(engine|tokens|redis|net|api|http|auth|ops|app)/",
     "the SDK talks HTTP: it includes neither storage nor the service"),
    (r"^client-sdk/include/", r"^boost/", "the SDK's public headers use no Boost"),
    # The service's rooms (service/src/*/): base is what every room may include; ops and auth
    # include only base; http calls the RequestHandler it owns (http/exchange.h), never api;
    # nothing but app includes app.
    (r"^service/src/base/", r"^(api|app|auth|http|ops)/",
     "the service's base is below every room: it includes none"),
    (r"^service/src/ops/", r"^(api|app|auth|http)/", "ops includes only base (and ops)"),
    (r"^service/src/auth/", r"^(api|app|http|ops)/", "auth includes only base (and auth)"),
    (r"^service/src/http/", r"^(api|app)/", "http includes neither api nor app"),
    (r"^service/src/(api|http|auth|ops|base)/", r"^app/", "only app includes app"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def main() -> int:
    files = subprocess.run(["git", "ls-files", "*.h", "*.cpp"], capture_output=True, text=True,
                           check=True).stdout.split()
    rules = [(re.compile(where), re.compile(forbidden), why) for where, forbidden, why in RULES]
    broken = 0
    for path in files:
        applicable = [(forbidden, why) for where, forbidden, why in rules if where.search(path)]
        if not applicable:
            continue
        with open(path, encoding="utf-8", errors="replace") as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                for forbidden, why in applicable:
                    if forbidden.search(match.group(1)):
                        print(f"{path}:{number}: #include {match.group(1)}: {why}", file=sys.stderr)
                        broken += 1
    if broken:
        print(f"check-layers: {broken} include(s) against docs/architecture.md's layers",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
