"""Summarise cargo's --timings reports: each build's total, the ten units
that took longest over all of them, and every crate compiled more than once
(the same crate and version in two units of the same kind: two feature sets
or two profiles, which is a build done twice).

    python3 scripts/build-timings.py REPORT.html [REPORT.html ...]

scripts/test.sh prints this after its builds, so a CI log says where a
cold build's time went (docs/internals/DEVELOPMENT.md keeps a cold run's
figures).
"""

import collections
import json
import re
import sys


def units(path: str) -> tuple[str, list[dict]]:
    text = open(path, encoding="utf-8").read()
    at = text.index("const UNIT_DATA = ") + len("const UNIT_DATA = ")
    data, _ = json.JSONDecoder().raw_decode(text[at:])
    total = re.search(r"<td>Total time:</td><td>([^<]*)</td>", text)
    return (total.group(1) if total else "?"), data


def kind(u: dict) -> str:
    return (u.get("target") or "lib").strip() + (" (build script)" if "build-script" in u.get("mode", "") else "")


def main(paths: list[str]) -> None:
    every = []
    for path in paths:
        total, data = units(path)
        built = [u for u in data if u.get("duration", 0) > 0]
        print(f"build {path.rsplit('/', 1)[-1]}: {total}, {len(built)} units compiled or run")
        every += built
    print("\nthe ten longest units (seconds; codegen in brackets):")
    for u in sorted(every, key=lambda u: -u["duration"])[:10]:
        codegen = next((s[1]["end"] - s[1]["start"] for s in (u.get("sections") or []) if s[0] == "codegen"), None)
        extra = f" [{codegen:.0f}]" if codegen is not None else ""
        print(f"  {u['duration']:7.1f}{extra:>7}  {u['name']} {u['version']} {kind(u)}")
    seen = collections.Counter((u["name"], u["version"], kind(u)) for u in every if "run-custom-build" not in u.get("mode", ""))
    twice = sorted(k for k, n in seen.items() if n > 1)
    print(f"\ncompiled more than once: {len(twice)}")
    for name, version, what in twice:
        print(f"  {name} {version} {what}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
