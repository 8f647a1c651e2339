#!/usr/bin/python3
"""Turns docs/openapi.yaml (the source) into a C++ file that holds it as JSON, for fencelockd to serve
at GET /v1/openapi.json. Run by CMake at build time; needs Debian's python3-yaml.

  embed_openapi.py IN.yaml OUT.cpp

Fails (exit 1, a message on stderr) when the YAML does not parse or is not an OpenAPI 3.1 document.
"""
import json
import sys

import yaml

def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: embed_openapi.py IN.yaml OUT.cpp\n")
        return 2
    source, target = argv[1], argv[2]
    try:
        with open(source, encoding="utf-8") as f:
            document = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        sys.stderr.write(f"embed_openapi.py: cannot read {source}: {e}\n")
        return 1
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3.1"):
        sys.stderr.write(f"embed_openapi.py: {source} is not an OpenAPI 3.1 document\n")
        return 1
    # ASCII only, so the C++ source has no encoding to agree on; compact, as it goes on the wire.
    text = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
    # A byte array, not a string literal: -Wpedantic (an error here) refuses literals over 64 KiB.
    rows = []
    data = text.encode("ascii")
    for start in range(0, len(data), 24):
        rows.append("    " + ", ".join(str(b) for b in data[start:start + 24]) + ",")
    cpp = (
        "// Generated from docs/openapi.yaml by service/tools/embed_openapi.py. Do not edit.\n"
        '#include "api/openapi_document.h"\n\n'
        "namespace fencelock::service {\n\n"
        "namespace {\n\n"
        f"constexpr char kDocument[{len(data)}] = {{\n" + "\n".join(rows) + "\n};\n\n"
        "}  // namespace\n\n"
        "std::string_view openapi_document_json() noexcept {\n"
        "  return {kDocument, sizeof(kDocument)};\n"
        "}\n\n"
        "}  // namespace fencelock::service\n"
    )
    with open(target, "w", encoding="ascii") as f:
        f.write(cpp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
