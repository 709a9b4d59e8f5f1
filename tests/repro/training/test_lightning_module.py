import math

import pytest
import torch
from mzattn.baselines import build_model
from mzattn.repro.training.lightning_module import SetModule, output_channels, warmup_cosine
from torch_geometric.data import Batch, Data

from mzlayers.layout import SetLayout

pytestmark = pytest.mark.filterwarnings("ignore:You are trying to `self.log")


def _batch(num_sets=6, features=3, target=1, classes=None):
    gen = torch.Generator().manual_seed(0)
    items = []
    for i in range(num_sets):
        x = torch.randn(3 + i % 3, features, generator=gen)
        y = torch.tensor([[i % classes]]) if classes else torch.randn(1, target, generator=gen)
        items.append(Data(x=x, y=y))
    return Batch.from_data_list(items)


def test_warmup_cosine_schedule():
    factors = [warmup_cosine(e, 5, 25) for e in range(26)]
    assert factors[:5] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert factors[5] == pytest.approx(1.0)
    assert factors[15] == pytest.approx(0.5)
    assert factors[25] == pytest.approx(0.0, abs=1e-12)
    assert all(a >= b for a, b in zip(factors[5:], factors[6:], strict=False))
    assert warmup_cosine(40, 5, 25) == pytest.approx(0.0, abs=1e-12)  # past the cap


def test_output_channels():
    assert output_channels("mse", 3) == 3
    assert output_channels("gaussian_nll", 3) == 6
    assert output_channels("cross_entropy", 1, num_classes=40) == 40
    with pytest.raises(ValueError, match="'loss'"):
        output_channels("l1", 1)
    with pytest.raises(ValueError, match="'num_classes'"):
        output_channels("cross_entropy", 1)


def test_regression_metrics_on_original_scale():
    data = _batch()
    model = build_model("standard", 3, 1)
    mean, std = torch.tensor([10.0]), torch.tensor([2.0])
    module = SetModule(model, target_mean=mean, target_std=std)
    module.eval()
    with torch.no_grad():
        loss = module._step(data, "test")
        pred = module(data.x, data.batch, dim_size=data.num_graphs)
    metrics = module.metrics["test_metrics"].compute()
    expected_mse = ((pred - data.y) ** 2).mean() * 4.0  # de-normalised: std^2 times
    assert loss.item() == pytest.approx(((pred - data.y) ** 2).mean().item(), rel=1e-5)
    assert metrics["mse"].item() == pytest.approx(expected_mse.item(), rel=1e-5)
    y = data.y.view(-1)
    r2 = 1 - ((pred.view(-1) - y) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    assert metrics["r2"].item() == pytest.approx(r2.item(), rel=1e-4)


def test_classification_accuracy_and_loss():
    data = _batch(num_sets=8, classes=4)
    module = SetModule(build_model("deep-sets", 3, 4), loss="cross_entropy", num_classes=4).eval()
    with torch.no_grad():
        loss = module._step(data, "val")
        logits = module(data.x, data.batch, dim_size=data.num_graphs)
    acc = module.metrics["val_metrics"].compute()["acc"]
    assert acc.item() == pytest.approx((logits.argmax(-1) == data.y.view(-1)).float().mean().item())
    assert loss.item() == pytest.approx(
        torch.nn.functional.cross_entropy(logits, data.y.view(-1)).item(), rel=1e-5)


def test_gaussian_head_with_tuple_output():
    data = _batch(target=2)
    model = build_model("mz-full", 3, output_channels("gaussian_nll", 2))
    module = SetModule(model, loss="gaussian_nll", target_dim=2).eval()
    out = model(data.x, data.batch, dim_size=data.num_graphs)
    assert isinstance(out, tuple)  # MZ models return (pred, ihw)
    with torch.no_grad():
        loss = module._step(data, "train")
    mean, var = module.gaussian_parameters(out[0].detach())
    nll = 0.5 * (torch.log(2 * math.pi * var) + (data.y - mean) ** 2 / var)
    assert (var > 0).all()
    assert loss.item() == pytest.approx(nll.mean().item(), rel=1e-4)
    assert set(module.metrics["train_metrics"].compute()) == {"mse", "r2", "nll"}


def test_optimizer_is_adamw_with_epoch_schedule():
    module = SetModule(build_model("standard", 3, 1), lr=1e-3, weight_decay=1e-5,
                       warmup_epochs=2, max_epochs=10)
    config = module.configure_optimizers()
    optimizer, scheduler = config["optimizer"], config["lr_scheduler"]["scheduler"]
    assert isinstance(optimizer, torch.optim.AdamW)
    assert optimizer.param_groups[0]["weight_decay"] == 1e-5
    assert optimizer.param_groups[0]["lr"] == pytest.approx(5e-4)  # first warm-up epoch
    assert config["lr_scheduler"]["interval"] == "epoch"
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-3)


def test_invalid_arguments():
    model = build_model("standard", 3, 1)
    with pytest.raises(ValueError, match="'lr'"):
        SetModule(model, lr=0.0)
    with pytest.raises(ValueError, match="'warmup_epochs'"):
        SetModule(model, warmup_epochs=-1)
    assert "loss=mse" in repr(SetModule(model))


def test_features_follow_the_module_dtype():
    data = _batch()
    module = SetModule(build_model("standard", 3, 1)).double().eval()
    with torch.no_grad():
        pred = module(data.x, data.batch, dim_size=data.num_graphs)  # float32 x, float64 model
        expected = module.model(data.x.double(), data.batch, dim_size=data.num_graphs)
    assert pred.dtype == torch.float64 and torch.equal(pred, expected)


@pytest.mark.parametrize("precision", ["64-true", "bf16-true"])
def test_true_precisions_train_on_pyg_batches(precision):
    # Lightning converts the parameters but not the tensors of a PyG batch: the models
    # raised their dtype TypeError for every cell run with --precision 64-true
    import lightning.pytorch as pl
    from torch_geometric.loader import DataLoader

    items = _batch(num_sets=8).to_data_list()
    module = SetModule(build_model("standard", 3, 1), warmup_epochs=0, max_epochs=1)
    trainer = pl.Trainer(max_epochs=1, accelerator="cpu", precision=precision, logger=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False)
    trainer.fit(module, DataLoader(items, batch_size=4), DataLoader(items, batch_size=4))
    assert math.isfinite(float(trainer.callback_metrics["val/loss"]))


def test_compile_runs_the_model_compiled_on_padded_batches(monkeypatch):
    # --compile: the whole model under torch.compile (one graph, static shapes), fed batches
    # padded to their bucket from the host sizes; the same predictions as eager
    options, compile = [], torch.compile

    def recording(model, **kwargs):  # aot_eager: the same graph without inductor's build
        options.append(kwargs)
        return compile(model, **{**kwargs, "mode": None, "backend": "aot_eager"})

    monkeypatch.setattr(torch, "compile", recording)
    torch.manual_seed(0)
    model = build_model("standard", 3, 1, channels=16, heads=2, ff_channels=32,
                        num_induced_points=4)
    compiled, eager = SetModule(model, compile=True).eval(), SetModule(model).eval()
    data = _batch()  # sets of 3 to 5 elements: padded to 8
    layout = SetLayout.from_sizes(data.batch, data.ptr.diff().tolist(), data.ptr)
    got = compiled(data.x, data.batch, data.num_graphs, layout=layout)
    expected = eager(data.x, data.batch, data.num_graphs, layout=layout)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert options == [dict(fullgraph=True, dynamic=False, mode="default")]  # CPU: no graphs
    assert not any("compiled" in key for key in compiled.state_dict())
