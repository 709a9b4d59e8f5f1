r"""A tiny table script for the fault tests, run as a real process:
:obj:`python faulty_table.py --profile smoke --out DIR ...`. Column
:obj:`slow` trains for :obj:`$FAULTY_EPOCHS` epochs (default 10,000, i.e.
until a signal stops it); the other columns take one to three epochs."""
import dataclasses
import os
import sys

from mzattn.repro.runner import main
from mzattn.repro.spec import SMOKE, Column, Row, TableSpec


def spec(epochs: int = 10_000) -> TableSpec:
    r"""The table, its :obj:`slow` column capped at :obj:`epochs`."""
    def column(label: str, max_epochs: int) -> Column:
        return Column(label, "meb", {"d": 4},
                      training={"max_epochs": max_epochs, "patience": max_epochs})
    profile = dataclasses.replace(SMOKE, warmup_epochs=0)
    return TableSpec(
        key="tiny", title="tiny", rows=(Row("Standard", "standard"),),
        columns=(column("fast", 1), column("slow", epochs), column("c3", 3), column("c4", 3)),
        profiles={"smoke": profile, "quick": profile, "full": profile})


if __name__ == "__main__":
    sys.exit(main(spec(int(os.environ.get("FAULTY_EPOCHS", 10_000))), sys.argv[1:]))
