r"""The convex-hull-volume table, shared by Table 22 (raw targets) and
Table 18 (normalised targets, App. D.2.4): the same models, columns and
profiles; each table states its own claims."""
import dataclasses
from collections.abc import Callable
from typing import Any

from mzattn.repro.core.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, Verdict, full
from mzattn.repro.report.claims import all_compare

DIMENSIONS = (3, 6, 9)
MZ = "MZAttn-Full"


def baselines(linear_label: str) -> list[str]:
    r"""The context-rigid rows of a hull table whose linear-attention row is
    labelled :obj:`linear_label`."""
    return ["Standard", "ST-Large", "HyperNet", "Perceiver", linear_label]


def beats_every_baseline(column: str, linear_label: str) -> Callable[[Any], Verdict]:
    r"""The check "MZAttn-Full beats every baseline at :obj:`column`"."""
    return lambda r: all_compare(r, (MZ, column), ">",
                                 [(row, column) for row in baselines(linear_label)])


def hull_spec(*, key: str, title: str, normalize: bool, linear_label: str,
              claims: tuple[Claim, ...], notes: str = "",
              paper_cell: Callable[[str, str], tuple[str, str] | None] | None = None
              ) -> TableSpec:
    r"""The hull table :obj:`key` with targets normalised or not and its
    :obj:`claims`; :obj:`linear_label` is the linear-attention row's label
    as the paper prints it in that table."""
    rows = (*(Row(label, model) for label, model in zip(
        baselines(linear_label), ("standard", "st-large", "hypernet-r8", "perceiver", "la-st"),
        strict=True)), Row(MZ, "mz-full"), Row("MZAttn-Large", "mz-large"))
    columns = tuple(Column(f"d={d}", "hull", {"d": d}, normalize=normalize)
                    for d in DIMENSIONS)
    profiles = {"smoke": SMOKE, "quick": dataclasses.replace(QUICK, columns=("d=3", "d=9")),
                "full": full(seeds=(0, 1, 2, 3, 4))}
    return TableSpec(key=key, title=title, rows=rows, columns=columns, profiles=profiles,
                     paper=key, paper_cell=paper_cell, claims=claims, notes=notes)
