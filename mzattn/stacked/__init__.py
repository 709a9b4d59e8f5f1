r"""Seeds together: :math:`K` replicas of one set model trained in one
process as one module (:func:`torch.func.vmap` over stacked parameters).

.. code-block:: python

    from mzattn.baselines import build_model
    from mzattn.stacked import StackedSeeds, stack_sets

    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        models.append(build_model('standard', 8, 1))
    stacked = StackedSeeds(models)
    optimizer = torch.optim.AdamW(stacked.parameters(), lr=1e-4)
    stacked.keep_frozen(optimizer)
    # each seed's own ragged batch (x_k [N_k, 8], batch_k [N_k], B sets each)
    x, mask = stack_sets([x0, x1, x2], [batch0, batch1, batch2], dim_size=B)
    pred = stacked(x, mask=mask)                            # [3, B, 1]
    F.mse_loss(pred, y, reduction='none').mean((1, 2)).sum().backward()   # y [3, B, 1]
    stacked.clip_grad_norm_(1.0)
    optimizer.step()
"""
from mzattn.stacked.batching import stack_sets
from mzattn.stacked.replicas import RANDOMNESS, StackedSeeds
from mzattn.stacked.support import UNSTACKABLE, kernel_problem, unstackable_reason

__all__ = [
    'RANDOMNESS',
    'StackedSeeds',
    'UNSTACKABLE',
    'kernel_problem',
    'stack_sets',
    'unstackable_reason',
]
