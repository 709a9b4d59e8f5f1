r"""The convex-hull-volume table, shared by Table 22 (raw targets) and
Table 18 (normalised targets, App. D.2.4): the same models, columns,
profiles and claims."""
import dataclasses
from collections.abc import Callable

from mzattn.repro.claims import all_compare
from mzattn.repro.spec import QUICK, SMOKE, Claim, Column, Row, TableSpec, full

DIMENSIONS = (3, 6, 9)
MZ = "MZAttn-Full"


def hull_spec(*, key: str, title: str, normalize: bool, linear_label: str,
              paper_cell: Callable[[str, str], tuple[str, str] | None] | None = None
              ) -> TableSpec:
    r"""The hull table :obj:`key` with targets normalised or not;
    :obj:`linear_label` is the linear-attention row's label as the paper
    prints it in that table."""
    rows = (Row("Standard", "standard"), Row("ST-Large", "st-large"),
            Row("HyperNet", "hypernet-r8"), Row("Perceiver", "perceiver"),
            Row(linear_label, "la-st"), Row(MZ, "mz-full"), Row("MZAttn-Large", "mz-large"))
    columns = tuple(Column(f"d={d}", "hull", {"d": d}, normalize=normalize)
                    for d in DIMENSIONS)
    baselines = [row.label for row in rows if not row.label.startswith("MZAttn")]
    first, last = columns[0].label, columns[-1].label
    claims = (
        Claim(f"MZAttn-Full beats every baseline at {first}",
              lambda r: all_compare(r, (MZ, first), ">", [(row, first) for row in baselines])),
        Claim("MZAttn-Full beats every baseline at the largest d",
              lambda r: all_compare(r, (MZ, last), ">", [(row, last) for row in baselines])),
    )
    profiles = {"smoke": SMOKE, "quick": dataclasses.replace(QUICK, columns=("d=3", "d=9")),
                "full": full(seeds=(0, 1, 2, 3, 4))}
    return TableSpec(key=key, title=title, rows=rows, columns=columns, profiles=profiles,
                     paper=key, paper_cell=paper_cell, claims=claims)
