r"""Where the files of a cell live: a cell (:class:`Cell`, a row of a table on
one of its columns, one seed, one batching) and the paths of its record, its
learning curve, its lock, its checkpoints and its parked checkpoints, all
under :obj:`{out}/{table}/`.

    {out}/{table}/cells/{cell_id}.json     the record (:func:`cell_path`)
    {out}/{table}/logs/{cell_id}.csv       the learning curve (:func:`log_path`)
    {out}/{table}/locks/{cell_id}.lock     a running cell's lock (:func:`lock_path`)
    {out}/{table}/ckpt/{cell_id}/          its checkpoints, ignored by git (:func:`checkpoint_dir`)
    {out}/{table}/parked/{cell_id}/        their parked copy, which git keeps on the
                                           branch `parks`, or on the results' own
                                           (:func:`parked_dir`)
"""
import os.path as osp
from dataclasses import dataclass

from mzattn.datasets.batching import check_batching
from mzattn.repro.core.spec import Column, Row, slug


@dataclass(frozen=True)
class Cell:
    r"""One trained model: a row of a table on one of its columns, one seed,
    its sets batched as :obj:`batching` says
    (:obj:`mzattn.datasets.batching.BATCHINGS`)."""
    table: str
    row: Row
    column: Column
    seed: int
    batching: str = "masked"

    def __post_init__(self) -> None:
        check_batching(self.batching)

    @property
    def cell_id(self) -> str:
        r"""File-system safe identifier, e.g. :obj:`MZAttn-Full__d_8__s0`,
        and :obj:`MZAttn-Full__d_8__s0__padded` for a batching other than
        :obj:`"masked"`, so the runs of two batchings never share a file."""
        cell_id = f"{slug(self.row.label)}__{slug(self.column.label)}__s{self.seed}"
        return cell_id if self.batching == "masked" else f"{cell_id}__{self.batching}"


def table_dir(out: str, table: str) -> str:
    r"""Folder of a table's results: :obj:`{out}/{table}`."""
    return osp.join(out, table)


def cell_path(out: str, cell: Cell) -> str:
    r"""JSON file of a cell: :obj:`{out}/{table}/cells/{cell_id}.json`."""
    return osp.join(table_dir(out, cell.table), "cells", f"{cell.cell_id}.json")


def log_path(out: str, cell: Cell) -> str:
    r"""CSV learning curve of a cell: :obj:`{out}/{table}/logs/{cell_id}.csv`."""
    return osp.join(table_dir(out, cell.table), "logs", f"{cell.cell_id}.csv")


def lock_path(out: str, cell: Cell) -> str:
    r"""Lock of a running cell: :obj:`{out}/{table}/locks/{cell_id}.lock`."""
    return osp.join(table_dir(out, cell.table), "locks", f"{cell.cell_id}.lock")


def stage_name(cell: Cell) -> str:
    r"""A cell as its stage lines name it (:mod:`~mzattn.repro.training.stages`):
    :obj:`"{table} {cell_id}"`."""
    return f"{cell.table} {cell.cell_id}"


def checkpoint_dir(out: str, cell: Cell) -> str:
    r"""Checkpoints of a cell: :obj:`{out}/{table}/ckpt/{cell_id}`."""
    return osp.join(table_dir(out, cell.table), "ckpt", cell.cell_id)


def record_of(path: str) -> str:
    r"""The record of the cell that a file or folder :obj:`path` of its
    table belongs to: :obj:`{table}/logs/{cell_id}.csv`,
    :obj:`{table}/parked/{cell_id}` or the like ->
    :obj:`{table}/cells/{cell_id}.json`.  Only a file's own suffix goes: a
    cell id may hold a dot (:obj:`LA-ST_Linear_Attn.__d_8__s0`)."""
    name = osp.basename(path)
    stem, suffix = osp.splitext(name)
    return osp.join(osp.dirname(osp.dirname(path)), "cells",
                    f"{stem if suffix in ('.csv', '.json') else name}.json")


def parked_dir(out: str, cell: Cell) -> str:
    r"""Parked checkpoints of a cell (:mod:`~mzattn.repro.training.parking`):
    :obj:`{out}/{table}/parked/{cell_id}`."""
    return osp.join(table_dir(out, cell.table), "parked", cell.cell_id)
