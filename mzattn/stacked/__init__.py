r"""Seeds together: :math:`K` replicas of one set model trained in one
process as one module (:func:`torch.func.vmap` over stacked parameters).

.. code-block:: python

    from mzattn.baselines import build_model
    from mzattn.stacked import StackedSeeds

    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        models.append(build_model('standard', 8, 1))
    stacked = StackedSeeds(models)
    optimizer = torch.optim.AdamW(stacked.parameters(), lr=1e-4)
    stacked.keep_frozen(optimizer)
    pred = stacked(x, batch, dim_size=B, layout=layout)    # x [3, N, 8] -> [3, B, 1]
    F.mse_loss(pred, y, reduction='none').mean((1, 2)).sum().backward()
    stacked.clip_grad_norm_(1.0)
    optimizer.step()
"""
from mzattn.stacked.replicas import RANDOMNESS, StackedSeeds
from mzattn.stacked.support import UNSTACKABLE, kernel_problem, unstackable_reason

__all__ = [
    'RANDOMNESS',
    'StackedSeeds',
    'UNSTACKABLE',
    'kernel_problem',
    'unstackable_reason',
]
