r"""Backfill: which cell of a queue starts next when the run has a time
limit (:obj:`mzattn-repro campaign NAME --time-limit 2h55m`).

A run that a session's end or a job's time limit will stop loses the epochs
of every cell it has not finished, unless a park carries them over
(:obj:`--park-after`; a checkout that does not keep the parks branch needs
:obj:`--park-branch results`). So, as SLURM's backfill scheduler does with jobs, a slot that
frees starts the first cell of the queue, in the campaign's order, whose
hours left at its cap (:meth:`~mzattn.repro.engine.status.Plan.hours_left`:
measured on its epochs, else on its other seeds', else probed; epochs
logged before read at the pace of the cells that ran here) fit in the
time the run has left; a cell that would not end in time lets the cells
after it that would start first. The cap is an upper bound (early
stopping ends most cells sooner), so a cell that fits ends in time unless
its epochs slow down. When none fits, the shortest starts: early stopping
may yet end it in time, and else it has the least left for its park
(:obj:`--park-after`) to carry to the next run.
"""
import time
from collections.abc import Sequence

from mzattn.repro.training.cells import RunOptions
from mzattn.repro.training.layout import Cell

from .launch import GroupRun
from .runs import Pick, Run, say
from .status import Plan


def backfill(cells: list[Cell], out: str, profile: str, seconds: float,
             options: RunOptions | None = None) -> Pick:
    r"""The :obj:`~mzattn.repro.engine.runs.Pick` of a run of :obj:`cells`
    that ends :obj:`seconds` from now: the first queued run whose cells'
    hours left at their caps (:class:`~mzattn.repro.engine.status.Plan` of
    :obj:`cells`, read anew at each pick) fit in the time left, else the
    one with the fewest (the first without an estimate when none has one);
    both pass over those another process runs. It says when a run starts
    out of order, or none fits."""
    deadline = time.monotonic() + seconds

    def pick(queue: Sequence[Run]) -> int:
        left_h = (deadline - time.monotonic()) / 3600
        plan = Plan(cells, out, profile, options)
        free = [index for index, run in enumerate(queue)  # not held by another process
                if all(plan.progress(cell).state != "running" for cell in _cells(queue[index]))]
        hours: dict[int, float] = {}
        for late, index in enumerate(free):
            hours_of = [plan.hours_left(cell) for cell in _cells(queue[index])]
            if None in hours_of:
                continue
            hours[index] = sum(hours_of)
            if hours[index] <= left_h:
                if late:
                    say(f"--time-limit: {_name(queue[index])} starts before {late} queued "
                        f"that may not end in the {left_h:.2f} h left (it has ≤ "
                        f"{hours[index]:.2f} h)")
                return index
        if not hours:
            return free[0] if free else 0
        shortest = min(hours, key=hours.__getitem__)  # the first of equals
        say(f"--time-limit: no queued cell ends by its cap in the {max(left_h, 0):.2f} h left: "
            f"the shortest, {_name(queue[shortest])} (≤ {hours[shortest]:.2f} h), starts (early "
            "stopping may end it in time; park it with --park-after)")
        return shortest

    return pick


def _name(run: Run) -> str:
    return f"{run.cell.table} {run.cell.cell_id}"


def _cells(run: Run) -> tuple[Cell, ...]:
    # the cells a run trains: a seed group's seeds, else its own
    return tuple(member.cell for member in run.members()) if isinstance(run, GroupRun) \
        else (run.cell,)
