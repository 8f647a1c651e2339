#!/usr/bin/env python3
"""Prints the fault campaign's results (build/faults/results.jsonl) as the markdown tables of
docs/safety.md: one row per scenario run, each property as "operations judged / violations";
with --summed (the long run's table), one row per scenario, summed over its runs."""
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


def summed(path):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        row = rows.setdefault(r["scenario"], {"runs": 0, "grants": 0, "draws": 0, "props": {}})
        row["runs"] += 1
        row["grants"] += r["operations"].get("acquire", {}).get("ok", 0)
        row["draws"] += r["operations"].get("draw", {}).get("ok", 0)
        for name, prop in r["properties"].items():
            total = row["props"].setdefault(name, dict(prop, checked=0, violations=0))
            total["checked"] += prop["checked"]
            total["violations"] += prop["violations"]
            total["as_it_must"] = total["as_it_must"] and prop["as_it_must"]
    print("| scenario | runs | grants | draws | " + " | ".join(PROPERTIES) + " |")
    print("|---" * (4 + len(PROPERTIES)) + "|")
    for name in sorted(rows):
        row = rows[name]
        cells = [cell(row["props"].get(p)) for p in PROPERTIES]
        print(f"| `{name}` | {row['runs']} | {row['grants']} | {row['draws']} | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--summed"]
    path = args[0] if args else "build/faults/results.jsonl"
    (summed if "--summed" in sys.argv else main)(path)
