import numpy as np
import pytest
import torch
from mzattn.datasets.episodes import EpisodeSets, draw_episode, episode_tokens


def _episodes(num_episodes=3, num_context=4, num_targets=2, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    features, values = rng.standard_normal((10, dim)), rng.standard_normal(10)
    return [episode_tokens(features, values, *draw_episode(rng, 10, num_context, num_targets))
            for _ in range(num_episodes)]


def test_draw_episode_is_disjoint_and_seeded():
    context, targets = draw_episode(np.random.default_rng(1), 10, 6, 4)
    assert len(context) == 6 and len(targets) == 4
    assert sorted(np.concatenate([context, targets])) == list(range(10))
    again = draw_episode(np.random.default_rng(1), 10, 6, 4)
    assert all(np.array_equal(a, b) for a, b in zip((context, targets), again, strict=True))
    with pytest.raises(ValueError, match="exceeds the 10 items"):
        draw_episode(np.random.default_rng(0), 10, 6, 5)
    with pytest.raises(ValueError, match="'num_context' and 'num_targets' must be positive"):
        draw_episode(np.random.default_rng(0), 10, 0, 5)


def test_episode_tokens_layout():
    features = np.arange(10.0).reshape(5, 2)
    values = np.array([0.5, 1.5, 2.5, 3.5, 4.5])
    context, targets, y = episode_tokens(features, values, np.array([3, 0]), np.array([4]))
    torch.testing.assert_close(context, torch.tensor([[6.0, 7.0, 3.5, 0.0],
                                                      [0.0, 1.0, 0.5, 0.0]]))
    torch.testing.assert_close(targets, torch.tensor([[8.0, 9.0, 0.0, 1.0]]))
    torch.testing.assert_close(y, torch.tensor([4.5]))


def test_episode_sets_one_set_per_target():
    episodes = _episodes()
    dataset = EpisodeSets()
    dataset.set_episodes(episodes)
    assert len(dataset) == 6 and dataset.num_episodes == 3
    assert (dataset.num_context, dataset.num_targets) == (4, 2)
    data = dataset[3]  # episode 1, target 1
    context, targets, values = episodes[1]
    torch.testing.assert_close(data.x, torch.cat([context, targets[1:]]))
    torch.testing.assert_close(data.y, values[1].view(1, 1))
    assert data.x[:-1, -1].eq(0).all() and data.x[-1, -1] == 1
    view = dataset[:5]
    assert len(view) == 5 and torch.equal(view[4].x, dataset[4].x)
    assert repr(dataset) == "EpisodeSets(6, episodes=3, num_context=4, num_targets=2)"
    with pytest.raises(ValueError, match="'episodes' must hold"):
        EpisodeSets().set_episodes([])
