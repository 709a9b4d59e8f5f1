r"""The models of the MEB table, shared by Table 3 and its distribution
study (Table 3 sensitivity, :mod:`.table03_sensitivity`); each table states
its own columns, profiles and claims."""
from mzattn.repro.core.spec import Row

ROWS = (
    Row("Standard", "standard"),
    Row("ST-Large", "st-large"),
    Row("HyperNet (r=8)", "hypernet-r8"),
    Row("HyperNet (r=64, full key-rank)", "hypernet-r64"),
    Row("Perceiver", "perceiver"),
    Row("LA-ST (Linear Attn.)", "la-st"),
    Row("Standard (mean-pool head)", "st-meanpool"),
    Row("Mamba + PMA", "mamba-pma"),
    Row("MZAttn-Full", "mz-full"),
)
