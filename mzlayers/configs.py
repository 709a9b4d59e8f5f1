r"""The paper's named Set Transformer configurations (App. A.1).

=============  ==========================================  ============
name           configuration                               paper params
=============  ==========================================  ============
``standard``   :math:`d=64, d_{ff}=128`                     208K
``st-large``   :math:`d=80, d_{ff}=200`                     362K
``mz-slim``    MZ, :math:`n_g=2, L=1`                       --
``mz-med``     MZ, :math:`n_g=4, L=2`                       --
``mz-full``    MZ, :math:`n_g=8, L=4`                       365--372K
``mz-large``   MZ, :math:`n_g=16, L=8`                      --
=============  ==========================================  ============
"""

import torch

from mzlayers.mz_set_transformer import MZSetTransformer
from mzlayers.set_transformer import SetTransformer

#: name -> (model class, keyword arguments)
CONFIGS: dict[str, tuple[type, dict]] = {
    'standard': (SetTransformer, dict()),
    'st-large': (SetTransformer, dict(channels=80, ff_channels=200)),
    'st-meanpool': (SetTransformer, dict(pooling='mean')),
    'mz-slim': (MZSetTransformer, dict(num_generators=2, num_matrix_generators=1)),
    'mz-med': (MZSetTransformer, dict(num_generators=4, num_matrix_generators=2)),
    'mz-full': (MZSetTransformer, dict(num_generators=8, num_matrix_generators=4)),
    'mz-large': (MZSetTransformer, dict(num_generators=16, num_matrix_generators=8)),
}


def build_set_transformer(name: str, in_channels: int, out_channels: int,
                          **overrides) -> SetTransformer | MZSetTransformer:
    r"""Builds the named configuration; :obj:`overrides` replace any of its
    keyword arguments."""
    if name not in CONFIGS:
        raise ValueError(f"Unknown configuration '{name}' (choose from "
                         f"{sorted(CONFIGS)})")
    cls, kwargs = CONFIGS[name]
    return cls(in_channels, out_channels, **{**kwargs, **overrides})


def count_parameters(model: torch.nn.Module) -> int:
    r"""Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
