import os.path as osp

from mzattn.repro.training.layout import record_of


def test_a_file_or_folder_of_a_cell_maps_to_its_record():
    table = osp.join("results", "table3")
    for cell_id in ("Standard__d_8__s0", "LA-ST_Linear_Attn.__d_16__s0__padded"):
        record = osp.join(table, "cells", f"{cell_id}.json")
        assert record_of(osp.join(table, "logs", f"{cell_id}.csv")) == record
        assert record_of(osp.join(table, "parked", cell_id)) == record  # a folder: no suffix
        assert record_of(osp.join(table, "ckpt", cell_id)) == record
