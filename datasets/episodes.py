r"""Few-shot episodes as sets, one set per target: the layout shared by the
Neural-Process image completion and the tabular meta-regression of the
paper's negative-transfer study (App. D.5.6).

An episode draws :math:`K` context items and :math:`T` target items, all
distinct, from one pool (the pixels of an image, the rows of a table). The
harness predicts one value per set, so an episode becomes :math:`T` sets that
share its context: set :math:`t` holds the context tokens
:math:`[f_k, v_k, 0]` and, last, the target token :math:`[f_t, 0, 1]`, and its
label is :math:`v_t`. The mean loss over the :math:`T` sets is the
Neural-Process loss of the episode averaged over its targets.
"""
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, Dataset

from ._io import CleanDownload


def draw_episode(rng: np.random.Generator, pool: int, num_context: int,
                 num_targets: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Disjoint random indices into a pool of :obj:`pool` items: the context
    :math:`(K)` and the targets :math:`(T)`, both in draw order."""
    if num_context < 1 or num_targets < 1:
        raise ValueError(f"'num_context' and 'num_targets' must be positive "
                         f"(got {num_context}, {num_targets})")
    if num_context + num_targets > pool:
        raise ValueError(f"'num_context' + 'num_targets' = {num_context + num_targets} "
                         f"exceeds the {pool} items an episode draws from")
    drawn = rng.permutation(pool)[:num_context + num_targets]
    return drawn[:num_context], drawn[num_context:]


def episode_tokens(features: np.ndarray, values: np.ndarray, context: np.ndarray,
                   targets: np.ndarray) -> tuple[Tensor, Tensor, Tensor]:
    r"""The tokens of one episode drawn from a pool of features
    :math:`(P, D)` and values :math:`(P)`: context rows
    :math:`[f_k, v_k, 0]` :math:`(K, D + 2)`, target rows :math:`[f_t, 0, 1]`
    :math:`(T, D + 2)` and the target values :math:`(T)` (float32)."""
    zeros, ones = np.zeros((len(context), 1)), np.ones((len(targets), 1))
    context_rows = np.concatenate([features[context], values[context, None], zeros], axis=1)
    target_rows = np.concatenate([features[targets], 0.0 * ones, ones], axis=1)
    return (torch.from_numpy(context_rows).float(), torch.from_numpy(target_rows).float(),
            torch.from_numpy(values[targets]).float())


class EpisodeSets(CleanDownload, Dataset):
    r"""The sets of few-shot episodes, one per target (see the module
    docstring): set :math:`i` is target :math:`i \bmod T` of episode
    :math:`\lfloor i / T \rfloor`, built on access from the stored episodes,
    so that :math:`E \cdot T` sets cost :math:`E (K + T)` tokens of memory.
    Slicing (:obj:`dataset[:n]`) gives a view. Subclasses compute the
    episodes and pass them to :meth:`set_episodes`.

    Args:
        root (str, optional): Root folder of the source files.
            (default: :obj:`None`)
        transform (callable, optional): Applied to every set on access.
            (default: :obj:`None`)

    Attributes:
        context_tokens (Tensor): Context rows :math:`(E, K, D + 2)`.
        target_tokens (Tensor): Target rows :math:`(E, T, D + 2)`.
        target_values (Tensor): Target values :math:`(E, T)`.

    Shapes:
        - **x** :math:`(K + 1, D + 2)`: context rows, then the target row;
          the last column flags the target
        - **y** :math:`(1, 1)`
    """
    def __init__(self, root: str | None = None,
                 transform: Callable[[Data], Data] | None = None) -> None:
        super().__init__(root, transform)
        self.context_tokens = self.target_tokens = self.target_values = None

    def set_episodes(self, episodes: list[tuple[Tensor, Tensor, Tensor]]) -> None:
        r"""Stores the episodes, each as returned by :func:`episode_tokens`."""
        if not episodes:
            raise ValueError("'episodes' must hold at least one episode")
        context, targets, values = zip(*episodes, strict=True)
        self.context_tokens = torch.stack(context)  # [E, K, D + 2]
        self.target_tokens = torch.stack(targets)  # [E, T, D + 2]
        self.target_values = torch.stack(values)  # [E, T]

    @property
    def num_episodes(self) -> int:
        r"""Episodes :math:`E`."""
        return self.context_tokens.size(0)

    @property
    def num_context(self) -> int:
        r"""Context items per episode :math:`K`."""
        return self.context_tokens.size(1)

    @property
    def num_targets(self) -> int:
        r"""Targets per episode :math:`T` (sets per episode)."""
        return self.target_tokens.size(1)

    def len(self) -> int:
        return self.num_episodes * self.num_targets

    def get(self, idx: int) -> Data:
        episode, target = divmod(idx, self.num_targets)
        x = torch.cat([self.context_tokens[episode],
                       self.target_tokens[episode, target:target + 1]])
        return Data(x=x, y=self.target_values[episode, target].view(1, 1))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self)}, episodes={self.num_episodes}, "
                f"num_context={self.num_context}, num_targets={self.num_targets})")
