import pytest
import torch

from mzlayers import MZSetTransformerAggregation, set_recompute
from mzlayers import memory as memory_module
from mzlayers.layout import SetLayout
from mzlayers.memory import EncoderShape, check_memory, free_memory


def _layout(counts: list[int]) -> SetLayout:
    batch = torch.arange(len(counts)).repeat_interleave(torch.tensor(counts))
    return SetLayout(batch, len(counts), counts)


def _shape(**changes) -> EncoderShape:
    # MZSetTransformerAggregation(8, heads=2)'s
    return MZSetTransformerAggregation(8, heads=2, **changes).memory_shape()


def _peak(shape: EncoderShape, counts: list[int], grad: bool = True) -> int:
    return shape.peak(_layout(counts), device_type='cpu', element_size=4, grad=grad)


def test_a_call_over_the_budget_fails_before_it_runs_and_names_what_fits(monkeypatch):
    sab, isab = _peak(_shape(), [3000]), _peak(_shape(num_induced_points=16), [3000])
    assert isab < sab
    layer = MZSetTransformerAggregation(8, heads=2, memory_budget=(sab + isab) // 2)

    def never(*args, **kwargs):
        raise AssertionError('the encoder ran')
    monkeypatch.setattr(layer.encoder, 'forward', never)
    with pytest.raises(MemoryError) as error:
        layer(torch.randn(3000, 8), torch.zeros(3000, dtype=torch.long))
    message = str(error.value)
    assert message.startswith('MZSetTransformerAggregation: a call on 1 set(s) of 3,000 '
                              'elements (the largest of 3,000) would need about ')
    assert f'num_induced_points=16 (about {memory_module.gib(isab)})' in message
    assert 'memory_budget=None disables the check' in message


def test_a_normal_call_is_unaffected_and_queries_no_free_memory(monkeypatch):
    def unexpected(device):
        raise AssertionError('free memory queried for a small call')
    monkeypatch.setattr(memory_module, 'free_memory', unexpected)
    torch.manual_seed(0)
    guarded = MZSetTransformerAggregation(8, heads=2, num_induced_points=4)
    free = MZSetTransformerAggregation(8, heads=2, num_induced_points=4, memory_budget=None)
    free.load_state_dict(guarded.state_dict())
    x, index = torch.randn(30, 8), torch.tensor([0] * 10 + [1] * 5 + [3] * 15)
    torch.testing.assert_close(guarded(x, index, dim_size=4), free(x, index, dim_size=4),
                               atol=0, rtol=0)


def test_a_fraction_of_the_free_memory_guards_the_set_of_the_issue(monkeypatch):
    layout = _layout([200_000])  # issue 36: one set of 200,000 elements, SAB encoder
    monkeypatch.setattr(memory_module, 'free_memory', lambda device: 2**30)
    with pytest.raises(MemoryError, match=r'1 set\(s\) of 200,000 elements.* over the '
                                          r'budget of 512 MiB \(memory_budget=0.5, fraction'):
        check_memory(_shape(), layout, 0.5, device=torch.device('cpu'), element_size=4,
                     grad=True)
    check_memory(_shape(), layout, None, device=torch.device('cpu'), element_size=4, grad=True)
    monkeypatch.setattr(memory_module, 'free_memory', lambda device: 2**36)
    check_memory(_shape(), layout, 0.5, device=torch.device('cpu'), element_size=4, grad=True)


def test_padding_a_skewed_batch_is_what_the_dense_backend_costs():
    skewed = [10_000] + [1] * 1000  # padded to 1,001 sets of 10,000 by 'dense'
    dense, auto = _peak(_shape(backend='dense'), skewed, False), _peak(_shape(), skewed, False)
    assert dense > 20 * auto
    assert _peak(_shape(), [10_000], False) < _peak(_shape(), [20_000], False)


@pytest.mark.parametrize('budget', [0, 0.0, 1.5, -1, 'lots', True])
def test_memory_budget_is_validated(budget):
    with pytest.raises(ValueError, match="'memory_budget' must be None, a fraction"):
        MZSetTransformerAggregation(8, memory_budget=budget)


def test_free_memory_of_the_host_is_known():
    assert free_memory(torch.device('cpu')) > 0


def test_stored_activations_raise_the_estimate_of_training_only():
    layer = MZSetTransformerAggregation(8, heads=2, num_induced_points=4)
    default = layer.memory_shape()
    stored = set_recompute(layer, False).memory_shape()
    assert default.recompute and not stored.recompute
    assert _peak(stored, [3000]) > 2 * _peak(default, [3000])
    assert _peak(stored, [3000], grad=False) == _peak(default, [3000], grad=False)
