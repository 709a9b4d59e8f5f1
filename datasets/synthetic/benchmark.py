r"""Times the generation of synthetic task splits and prints a Markdown table.

.. code-block:: bash

    python -m mzattn.datasets.synthetic.benchmark --sizes 2000 500 500 \
        task_a task_f:d=512 meb:d=32

Each spec is a task name with optional :obj:`field=value` overrides. The
data go to a fresh temporary root (or :obj:`--root`), so the first load
generates and the second reads the cache; both times are reported.
"""
import argparse
import ast
import tempfile
import time

from .dataset import load_splits
from .tasks import TASKS


def parse_spec(spec: str) -> tuple[str, dict]:
    r"""Splits :obj:`"name:field=value,field=value"` into the task name and
    its overrides (values parsed as Python literals)."""
    name, _, rest = spec.partition(":")
    overrides = {}
    for item in filter(None, rest.split(",")):
        field, _, value = item.partition("=")
        overrides[field] = ast.literal_eval(value)
    return name, overrides


def time_spec(spec: str, sizes: tuple[int, int, int] | None, root: str) -> dict:
    r"""Generates, then reloads, the three splits of :obj:`spec`."""
    name, overrides = parse_spec(spec)
    if sizes is not None:
        overrides = {**dict(zip(("num_train", "num_val", "num_test"), sizes,
                                strict=True)), **overrides}
    start = time.perf_counter()
    splits = load_splits(name, root=root, log=False, **overrides)
    generated = time.perf_counter() - start
    start = time.perf_counter()
    load_splits(name, root=root, log=False, **overrides)
    return {"spec": spec, "sizes": "/".join(str(len(s)) for s in splits),
            "generate_s": generated, "reload_s": time.perf_counter() - start,
            "degenerate": sum(s.summary()["num_degenerate"] for s in splits)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=sorted(TASKS),
                        help="task[:field=value,...] (default: every task)")
    parser.add_argument("--sizes", type=int, nargs=3, metavar=("TRAIN", "VAL", "TEST"),
                        help="split sizes (default: the paper's)")
    parser.add_argument("--root", help="cache root (default: a fresh temporary folder)")
    args = parser.parse_args(argv)
    sizes = tuple(args.sizes) if args.sizes else None
    with tempfile.TemporaryDirectory() as tmp:
        print("| task | train/val/test | generate (s) | cached reload (s) | degenerate |")
        print("| --- | --- | ---: | ---: | ---: |")
        for spec in args.specs:
            row = time_spec(spec, sizes, args.root or tmp)
            print(f"| {row['spec']} | {row['sizes']} | {row['generate_s']:.1f} | "
                  f"{row['reload_s']:.2f} | {row['degenerate']} |", flush=True)


if __name__ == "__main__":
    main()
