import pytest
from mzattn.repro.training.progress import EpochLogger, duration


@pytest.mark.parametrize("seconds, text", [(0.4, "0 s"), (45, "45 s"), (185, "3 min 05 s")])
def test_duration(seconds, text):
    assert duration(seconds) == text


class _Trainer:
    sanity_checking, is_global_zero, max_epochs = False, True, 10

    def __init__(self, epoch: int):
        self.current_epoch = epoch
        self.callback_metrics = {"val/loss": 0.5, "val/r2": 0.25}
        self.optimizers = [type("Opt", (), {"param_groups": [{"lr": 1e-3}]})()]


def test_epoch_lines_name_the_cell_and_the_time_left(monkeypatch, capsys):
    clock = iter([100.0, 130.0])  # training starts at 100 s; epoch 3 of a run resumed at 2
    monkeypatch.setattr("mzattn.repro.training.progress.time.perf_counter", lambda: next(clock))
    logger = EpochLogger("MZAttn-Full d=8 seed 0")
    logger.on_train_start(_Trainer(1), None)
    logger.on_train_epoch_start(_Trainer(2), None)
    logger.on_validation_end(_Trainer(2), None)
    line = capsys.readouterr().out.strip()
    # 30 s for 2 epochs since the resume: 7 epochs left at 15 s each
    assert line == ("[MZAttn-Full d=8 seed 0] epoch 3/10 lr=0.001 val/loss=0.5 val/r2=0.25, "
                    "~1 min 45 s left")
