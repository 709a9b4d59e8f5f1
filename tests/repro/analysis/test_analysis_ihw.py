import torch
from mzattn.repro.analysis.predict import predict, scalar_ihw

from mzlayers import MZMultiheadAttention, MZSetTransformer, Zonotope
from mzlayers.layout import resolve_layout


def _model(seed=0):
    torch.manual_seed(seed)
    model = MZSetTransformer(3, 2, channels=16, heads=2, num_generators=4,
                             num_matrix_generators=2, ff_channels=32, num_induced_points=4)
    with torch.no_grad():  # make the generators non-trivial
        for module in model.modules():
            if isinstance(module, MZMultiheadAttention):
                module.matrix_generators.normal_(std=0.5)
    return model.eval()


def _batch(seed=0):
    gen = torch.Generator().manual_seed(seed)
    batch = torch.tensor([0, 0, 0, 1, 1, 3, 3, 3, 3])  # set 2 is empty
    return torch.randn(batch.numel(), 3, generator=gen), batch


def test_ihw_is_the_generator_abs_sum_of_the_output_zonotope():
    model = _model()
    x, batch = _batch()
    pred, ihw = model(x, batch, dim_size=4)
    z = model.encoder(x, resolve_layout(x, batch, 4, 3))
    expected = z.generators.abs().sum(-2).view(4, -1)
    assert ihw.abs().sum() > 0
    assert torch.allclose(ihw, expected)
    assert torch.allclose(scalar_ihw(ihw), z.generators.abs().sum((-2, -1)).view(4))


def test_predict_returns_the_models_ihw_and_denormalises():
    from torch_geometric.data import Batch, Data
    model = _model()
    x, batch = _batch()
    sets = [Data(x=x[batch == i], y=torch.tensor([[float(i), -float(i)]])) for i in (0, 1, 3)]
    data = Batch.from_data_list(sets)
    out = predict([model], [data], target_mean=[1.0, 2.0], target_std=[2.0, 3.0])
    pred, ihw = model(data.x, data.batch, dim_size=3)
    assert torch.allclose(out.ihw, ihw)
    assert torch.allclose(out.mean, pred * torch.tensor([2.0, 3.0]) + torch.tensor([1.0, 2.0]))
    assert torch.allclose(out.target[:, 0], torch.tensor([0.0, 1.0, 3.0]) * 2 + 1)


def _layer_outputs(model, x, batch):
    outputs = []
    handles = [m.register_forward_hook(lambda mod, inp, out: outputs.append(out))
               for m in model.modules() if isinstance(m, MZMultiheadAttention)]
    model(x, batch, dim_size=4)
    for handle in handles:
        handle.remove()
    return outputs


def test_theorem_4a_sampled_points_stay_in_the_ihw_box_and_diameter_bound():
    gen = torch.Generator().manual_seed(1)
    for seed in range(3):
        model = _model(seed)
        x, batch = _batch(seed)
        outputs = _layer_outputs(model, x, batch)
        assert outputs and all(isinstance(z, Zonotope) for z in outputs)
        for z in outputs:
            c, G, delta = z.center, z.generators, z.ihw()  # [N, d], [N, n_g, d], [N, d]
            n_g = z.num_generators
            xi = torch.rand(256, *c.shape[:-1], n_g, generator=gen) * 2 - 1
            xi[:2] = torch.sign(xi[:2])  # include box vertices
            points = c + torch.einsum("sng,ngd->snd", xi, G)
            assert ((points - c).abs() <= delta + 1e-5).all()
            # Thm. 4(a): diam{w^T (c + G xi)} = 2 sum_g |w^T G_g| <= 2 ||w||_2 IHW.
            w = torch.randn(c.size(-1), generator=gen)
            y = points @ w
            half_width = (G @ w).abs().sum(-1)
            bound = w.norm() * G.abs().sum((-2, -1))
            assert (y.max(0).values - y.min(0).values <= 2 * half_width + 1e-4).all()
            assert (half_width <= bound + 1e-5).all()
            assert (half_width > 0).any()
