#!/usr/bin/env python3
"""Prints the fault campaign's results (build/faults/results.jsonl) as the markdown table of
docs/safety.md: one row per scenario, each property as "operations judged / violations"."""
import json
import sys

PROPERTIES = ["tokens", "leases", "store", "set", "liveness"]


def cell(prop):
    if prop is None:
        return "—"
    text = f"{prop['checked']} / "
    violations = prop["violations"]
    if prop["expected_violations"]:
        return text + f"**{violations}** (must fire)"
    if not prop["promised"]:
        return text + f"{violations} (not promised)"
    if violations and prop["as_it_must"]:
        return text + f"{violations} (not judged)"
    return text + str(violations)


def main(path):
    print("| scenario | faults | acquires ok / refused / unknown | draws ok | "
          + " | ".join(PROPERTIES) + " |")
    print("|---" * (4 + len(PROPERTIES)) + "|")
    for line in open(path):
        r = json.loads(line)
        acquire = r["operations"].get("acquire", {})
        draws = r["operations"].get("draw", {}).get("ok", 0)
        name = ("control: " if r["control"] else "") + f"`{r['scenario']}`"
        cells = [cell(r["properties"].get(p)) for p in PROPERTIES]
        print(f"| {name} | {r['faults']} | {acquire.get('ok', 0)} / {acquire.get('fail', 0)} / "
              f"{acquire.get('info', 0)} | {draws} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/faults/results.jsonl")
