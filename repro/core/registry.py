r"""The reproduced tables: CLI key → table script module (imported lazily,
so :obj:`mzattn-repro list` and :obj:`--help` stay fast)."""
import ast
import importlib
import importlib.util

from mzattn.names import did_you_mean

from .spec import TableSpec

TABLE_MODULES: dict[str, str] = {
    "table1": "table01_depth_separation",
    "table2": "table02_main",
    "table3": "table03_meb",
    "table3-sensitivity": "table03_sensitivity",  # issue 18: Table 3's distribution axis
    "table4": "table04_rotation_scaling",
    "table5": "table05_hypernet_rank",
    "table6": "table06_parameter_efficiency",
    "table7": "egnn_comparison",
    "table8": "table08_matrix_generators",
    "table9": "table09_zonotope_generators",
    "table10": "table10_genqk",
    "table11": "table11_hypernet_rank",
    "table12": "table12_depth",
    "table13": "table13_sequence",
    "table15": "table15_ambiguity",
    "table16": "table16_size_generalization",
    "table17": "table17_mst_normalized",
    "table18": "table18_hull_normalized",
    "table22": "table22_hull",
    "table23": "table23_mst_scaling",
    "table24": "table24_sgsp",
    "table25": "table25_large_scale",
    "table26": "table26_patience",
    "table27": "table27_meta_regression",
    "table28": "table28_qm9",
    "table29": "table29_slot_attention",
    "negative_transfer": "negative_transfer",  # App. D.5.6, reported in the text
    "table31": "table31_transfer",
    "table32": "table32_resnet_sgsp",
    "table33": "table33_dimension_scaling",
}
r"""Every table with a script in :obj:`repro/tables/`, in the paper's order (with
App. D.5.6's negative-transfer numbers, quoted in its text)."""


def list_tables() -> list[str]:
    r"""The table keys whose scripts exist, in the paper's order."""
    return [key for key in TABLE_MODULES if importlib.util.find_spec(_module(key))]


def _module(key: str) -> str:
    return f"mzattn.repro.tables.{TABLE_MODULES[key]}"


def check_table(key: str) -> None:
    r"""Raises a :class:`ValueError` naming the closest tables when
    :obj:`key` is not one."""
    if key not in TABLE_MODULES:
        raise ValueError(f"unknown table {key!r}{did_you_mean(key, TABLE_MODULES)}; "
                         f"'mzattn-repro list' lists them")


def load_spec(key: str) -> TableSpec:
    r"""The :class:`~mzattn.repro.core.spec.TableSpec` of table :obj:`key`."""
    check_table(key)
    return importlib.import_module(_module(key)).SPEC


def table_title(key: str) -> str:
    r"""The title of table :obj:`key`, read from its script's source (the
    :obj:`title=` string of its spec) without importing it."""
    check_table(key)
    with open(importlib.util.find_spec(_module(key)).origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "title" \
                and isinstance(node.value, ast.Constant):
            return node.value.value
    return load_spec(key).title
