import pytest
import torch
import torch.nn.functional as F
from mzattn.baselines import build_model

from mzattn.stacked import StackedSeeds, stack_sets

from .helpers import layout_of, prediction

SIZES = [5, 0, 7, 3]  # ragged, with an empty set
K, CHANNELS, STEPS = 3, 4, 3


def replicas(name: str, dtype: torch.dtype = torch.float, **overrides) -> list[torch.nn.Module]:
    models = []
    for seed in range(K):
        torch.manual_seed(seed)
        models.append(build_model(name, CHANNELS, 1, **overrides).to(dtype))
    return models


def batches(dtype: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    # replica k's batch of each step: features [K, N, F], targets [K, B, 1]
    generator = torch.Generator().manual_seed(7)
    return [(torch.randn(K, sum(SIZES), CHANNELS, generator=generator, dtype=dtype),
             torch.randn(K, len(SIZES), 1, generator=generator, dtype=dtype))
            for _ in range(STEPS)]


def own_sizes(k: int) -> list[int]:
    # replica k's sets: ragged, an empty one, sizes that differ between replicas
    return SIZES[k:] + SIZES[:k]


class Inputs:
    r"""A replica's inputs alone, and all replicas' stacked, in one of two modes:
    'shared' (one ragged layout) or 'own' (each its own sets: stack_sets)."""
    def __init__(self, mode: str):
        self.mode = mode

    def alone(self, x: torch.Tensor, k: int) -> dict:
        batch, layout = layout_of(SIZES if self.mode == 'shared' else own_sizes(k))
        return {'x': x[k], 'batch': batch, 'dim_size': len(SIZES), 'layout': layout}

    def stacked(self, x: torch.Tensor) -> dict:
        if self.mode == 'shared':
            batch, layout = layout_of(SIZES)
            return {'x': x, 'batch': batch, 'dim_size': len(SIZES), 'layout': layout}
        padded, mask = stack_sets(list(x), [layout_of(own_sizes(k))[0] for k in range(K)],
                                  dim_size=len(SIZES))
        return {'x': padded, 'mask': mask}


def optimizer_of(params) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-5)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda e: 1.0 / (e + 1))


def train_alone(model: torch.nn.Module, data: list, k: int, steps: int,
                inputs: Inputs) -> None:
    optimizer, scheduler = optimizer_of(model.parameters())
    for x, y in data[:steps]:
        optimizer.zero_grad()
        out = prediction(model(**inputs.alone(x, k)))
        F.mse_loss(out, y[k]).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        scheduler.step()


def train_stacked(stacked: StackedSeeds, data: list, freeze_after: dict[int, int],
                  inputs: Inputs) -> None:
    optimizer, scheduler = optimizer_of(stacked.parameters())
    stacked.keep_frozen(optimizer)
    for step, (x, y) in enumerate(data):
        for k, steps in freeze_after.items():
            if step == steps:
                stacked.freeze(k)
        optimizer.zero_grad()
        out = prediction(stacked(**inputs.stacked(x)))
        F.mse_loss(out, y, reduction='none').mean((1, 2)).sum().backward()
        stacked.clip_grad_norm_(0.5)
        optimizer.step()
        scheduler.step()


def assert_same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=0, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize('mode', ['shared', 'own'])
@pytest.mark.parametrize('name', ['deep-sets', 'standard', 'mz-full', 'egnn'])
def test_stacked_training_equals_separate_training(name, mode):
    # same init, same batches => the parameters of separate training, replica by replica;
    # replica 1 stops after one step (early stopping) and stays there. 'own': every replica
    # its own ragged sets, trained alone with the default kernel, stacked with masks. In
    # float64: AdamW turns a gradient that is rounding noise (q and k of attention over one
    # token) into a step of up to lr, so float32 runs of one training differ by lr*noise/eps
    overrides = {'deep-sets': {'dropout': 0.0}, 'egnn': {}}.get(name, {'dropout': 0.0})
    if mode == 'shared' and name in ('standard', 'mz-full'):
        overrides['backend'] = 'dense'  # the segment kernel cannot run under vmap
    models, data, inputs = replicas(name, torch.double, **overrides), batches(torch.double), \
        Inputs(mode)
    stacked = StackedSeeds(models)
    train_stacked(stacked, data, freeze_after={1: 1}, inputs=inputs)
    moved = False
    for k, model in enumerate(models):
        steps = 1 if k == 1 else STEPS
        before = {key: value.clone() for key, value in model.state_dict().items()}
        train_alone(model, data, k, steps, inputs)
        assert_same_parameters(stacked.replica(k), model)
        moved |= any(not torch.equal(before[key], value)
                     for key, value in model.state_dict().items())
    assert moved  # the training changed the parameters at all
    assert stacked.frozen == {1}


def test_replica_round_trip_and_forward():
    batch, layout = layout_of(SIZES)
    models = [m.eval() for m in replicas('standard', backend='dense')]
    stacked = StackedSeeds(models)
    assert not stacked.training
    x = torch.randn(sum(SIZES), CHANNELS)
    out = stacked(x.expand(K, -1, -1), batch, dim_size=len(SIZES), layout=layout)
    assert out.shape == (K, len(SIZES), 1)
    for k, model in enumerate(models):
        expected = model(x, batch, dim_size=len(SIZES), layout=layout)
        torch.testing.assert_close(out[k], expected, atol=1e-6, rtol=0)
        torch.testing.assert_close(stacked.replica(k)(x, batch, dim_size=len(SIZES),
                                                      layout=layout), expected)
    stacked.load_replica(0, models[2])
    torch.testing.assert_close(stacked(x.expand(K, -1, -1), batch, dim_size=len(SIZES),
                                       layout=layout)[0], out[2])


def test_from_seeds_initialises_as_each_seed_alone():
    state = torch.random.get_rng_state()
    stacked = StackedSeeds.from_seeds(lambda: build_model('deep-sets', CHANNELS, 1), [0, 1, 2])
    assert torch.equal(torch.random.get_rng_state(), state)
    for k, model in enumerate(replicas('deep-sets')):
        assert_same_parameters(stacked.replica(k), model)


def test_frozen_replicas_are_in_the_state_dict():
    stacked = StackedSeeds(replicas('deep-sets'))
    stacked.freeze(2)
    other = StackedSeeds(replicas('deep-sets'))
    other.load_state_dict(stacked.state_dict())
    assert other.frozen == {2}
    assert_same_parameters(other.replica(0), stacked.replica(0))


def test_dropout_draws_per_replica():
    batch, layout = layout_of(SIZES)
    torch.manual_seed(0)
    model = build_model('deep-sets', CHANNELS, 1, dropout=0.5)
    x = torch.randn(1, sum(SIZES), CHANNELS).expand(2, -1, -1)
    different = StackedSeeds([model, model])(x, batch, dim_size=len(SIZES), layout=layout)
    same = StackedSeeds([model, model], randomness='same')(x, batch, dim_size=len(SIZES),
                                                           layout=layout)
    assert not torch.equal(different[0], different[1])
    assert torch.equal(same[0], same[1])


def test_clip_grad_norm_is_per_replica():
    # each replica's gradients as torch.nn.utils.clip_grad_norm_ leaves them, alone
    stacked = StackedSeeds(replicas('deep-sets'))
    generator = torch.Generator().manual_seed(0)
    for p in stacked.parameters():
        p.grad = torch.randn(p.shape, generator=generator)
        p.grad[0] *= 1e-3  # replica 0: a norm below the limit, left as it is
    grads = [[p.grad[k].clone() for p in stacked.parameters()] for k in range(K)]
    norms = stacked.clip_grad_norm_(1.0)
    assert norms[0] < 1.0 < norms[1]
    for k in range(K):
        alone = [torch.nn.Parameter(torch.empty_like(g)) for g in grads[k]]
        for p, g in zip(alone, grads[k], strict=True):
            p.grad = g
        torch.testing.assert_close(norms[k], torch.nn.utils.clip_grad_norm_(alone, 1.0))
        for p, q in zip(alone, stacked.parameters(), strict=True):
            torch.testing.assert_close(q.grad[k], p.grad, atol=1e-7, rtol=1e-6)


def test_invalid_arguments():
    with pytest.raises(ValueError, match='at least one'):
        StackedSeeds([])
    with pytest.raises(ValueError, match='randomness'):
        StackedSeeds(replicas('deep-sets'), randomness='other')
    with pytest.raises(ValueError, match='one class'):
        StackedSeeds([build_model('deep-sets', CHANNELS, 1), build_model('standard', CHANNELS, 1)])
    stacked = StackedSeeds(replicas('deep-sets'))
    batch, layout = layout_of(SIZES)
    with pytest.raises(ValueError, match='replicas first'):
        stacked(torch.randn(2, sum(SIZES), CHANNELS), batch, layout=layout)
    with pytest.raises(IndexError):
        stacked.replica(K)
    with pytest.raises(ValueError, match='does not match'):
        stacked.load_replica(0, build_model('deep-sets', CHANNELS + 1, 1))


def test_repr():
    assert repr(StackedSeeds(replicas('deep-sets'))) == \
        "StackedSeeds(DeepSets, replicas=3, randomness='different')"
