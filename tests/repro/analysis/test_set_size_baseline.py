import pytest
import torch
from mzattn.repro.analysis.set_size_baseline import baseline_scores, main, set_size_r2
from torch_geometric.data import Data


def _sets(sizes, target):
    return [Data(x=torch.randn(n, 3), y=torch.tensor([[target(n)]])) for n in sizes]


def test_a_target_of_the_set_size_alone_is_explained_exactly():
    train, test = _sets([3, 4, 4, 5, 7], lambda n: n ** 2), _sets([5, 3, 7], lambda n: n ** 2)
    assert set_size_r2(train, test) == pytest.approx(1.0)


def test_a_size_missing_from_training_gets_the_overall_mean():
    train = _sets([2, 2, 4, 4], lambda n: float(n))  # means 2 and 4, overall 3
    test = _sets([2, 3, 4], lambda n: float(n))  # predicted 2, 3, 4
    assert set_size_r2(train, test) == pytest.approx(1.0)
    assert set_size_r2(train, _sets([9, 2], lambda n: float(n))) < 0  # 9 -> 3: a poor guess


def test_the_table_notes_quote_the_scores_of_the_seed_0_splits(data_root, capsys):
    from mzattn.repro.core.spec import SET_SIZE_NOTE
    from mzattn.repro.tables.table06_parameter_efficiency import SPEC as TABLE6
    from mzattn.repro.tables.table29_slot_attention import SPEC as TABLE29
    scores = baseline_scores(root=data_root)  # the tasks' defaults: 5K train, 1K test
    # E[max] and E[range] grow with n; E[sum] = E[median] = 0 at every n
    assert [f"{scores[task]:.3f}" for task in ("set_max", "set_range", "set_sum", "set_median")
            ] == ["0.103", "0.198", "-0.003", "-0.009"]
    assert "0.103 on max and 0.198 on range (sum -0.003, median -0.009)" in SET_SIZE_NOTE
    assert SET_SIZE_NOTE in TABLE6.notes and SET_SIZE_NOTE in TABLE29.notes
    assert main(["--tasks", "set_max", "--data-root", data_root]) == 0
    assert capsys.readouterr().out == \
        "set_max      test R² of the mean target per set size: 0.103\n"
