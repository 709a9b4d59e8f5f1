r"""A tiny table script for the fault tests, run as a real process:
:obj:`python faulty_table.py --profile smoke --out DIR ...`. Column
:obj:`slow` trains for :obj:`$FAULTY_EPOCHS` epochs (default 10,000, i.e.
until a signal stops it) of 8 batches; column :obj:`stalls` trains epochs
of 8 batches at learning rate 1e-30 (no change) with patience 1, so that early stopping
fires at the end of its second epoch; the other columns take one to three
epochs. :obj:`$FAULTY_SIGNAL=NAME@EPOCH:BATCH` (e.g. :obj:`SIGTERM@1:3`, both
0-based) makes the process send itself that signal during that training
step, once. Under :obj:`--jobs N` the pool's workers (spawned: they run
this file's top level as :obj:`__mp_main__`) find the table by its key
too (:func:`register`)."""
import dataclasses
import os
import signal
import sys

from mzattn.repro.core import registry
from mzattn.repro.core.spec import SMOKE, Column, Row, TableSpec
from mzattn.repro.engine.runner import main
from mzattn.repro.training.lightning_module import SetModule


def spec(epochs: int = 10_000) -> TableSpec:
    r"""The table, its :obj:`slow` column capped at :obj:`epochs`."""
    def column(label: str, max_epochs: int, **training: float) -> Column:
        return Column(label, "meb", {"d": 4},
                      training={"max_epochs": max_epochs, "patience": max_epochs, **training})
    profile = dataclasses.replace(SMOKE, warmup_epochs=0)
    return TableSpec(
        key="tiny", title="tiny", rows=(Row("Standard", "standard"),),
        columns=(column("fast", 1), column("slow", epochs, batch_size=4), column("c3", 3),
                 column("c4", 3), column("stalls", 50, batch_size=4, patience=1, lr=1e-30)),
        profiles={"smoke": profile, "quick": profile, "full": profile})


def signal_during_step(name: str, epoch: int, batch: int) -> None:
    r"""Makes the training step :obj:`batch` of :obj:`epoch` send the signal
    :obj:`name` to this process (once)."""
    step, sent = SetModule.training_step, []

    def training_step(self, data, batch_idx):
        if (self.current_epoch, batch_idx) == (epoch, batch) and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.Signals[name])
        return step(self, data, batch_idx)
    SetModule.training_step = training_step


def register(table: TableSpec) -> None:
    r"""Makes :func:`~mzattn.repro.core.registry.load_spec` return :obj:`table` for
    its key in this process."""
    load_spec = registry.load_spec
    registry.load_spec = lambda key: table if key == table.key else load_spec(key)


SPEC = spec(int(os.environ.get("FAULTY_EPOCHS", 10_000)))
if __name__ in ("__main__", "__mp_main__"):
    register(SPEC)
if __name__ == "__main__":
    if "FAULTY_SIGNAL" in os.environ:
        name, position = os.environ["FAULTY_SIGNAL"].split("@")
        signal_during_step(name, *map(int, position.split(":")))
    sys.exit(main(SPEC, sys.argv[1:]))
