r"""Prints the requirements of ``pyproject.toml``, one a line, for
``pip install -r``: the core dependencies plus those of the extras named on
the command line, with the project's references to its own extras
(``mzattn[repro]``) expanded. An extra the project does not define is
skipped with a note on stderr, as pip does.

    python docker/requirements.py pyproject.toml all > requirements.txt

The Docker image installs its dependencies with it in their own layer, before
the sources are copied. It runs on the base image's Python, which may be
3.10 (``requires-python``): there TOML is read with the parser pip vendors.
"""
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip ships the same parser.
    from pip._vendor import tomli as tomllib

_SELF = re.compile(r"^\s*([A-Za-z0-9._-]+)\s*\[([^\]]*)\]\s*$")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(project: dict, extras: list[str]) -> list[str]:
    r"""The core dependencies of :obj:`project` (a parsed ``pyproject.toml``)
    and those of :obj:`extras`, in order and without repeats."""
    name = _normalise(project["name"])
    optional = project.get("optional-dependencies", {})
    lines, seen, todo = list(project.get("dependencies", [])), set(), list(extras)
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        if extra not in optional:
            print(f"requirements.py: {name} has no extra {extra!r}; skipped", file=sys.stderr)
            continue
        for line in optional[extra]:
            match = _SELF.match(line)
            if match and _normalise(match.group(1)) == name:
                todo += [e.strip() for e in match.group(2).split(",") if e.strip()]
            else:
                lines.append(line)
    return list(dict.fromkeys(lines))


def main(argv: list[str]) -> int:
    r"""``requirements.py PYPROJECT [EXTRA ...]``: prints the lines."""
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], "rb") as f:
        project = tomllib.load(f)["project"]
    print("\n".join(requirements(project, argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
