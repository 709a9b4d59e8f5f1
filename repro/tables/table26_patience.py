r"""Table 26 (App. D.4.7): early-stopping patience sweep
$\{20, 100, 300\}$ on the k-center furthest cost of CIFAR-100 ResNet-50
layer-3 features ($k = 5$, $n = 16$, $d = 1024$, $R^2$, 80 epochs).

Needs CIFAR-100 and the torchvision ImageNet ResNet-50 weights; the smoke
profile runs offline on scikit-learn digits through a random-weight ResNet-50.

.. code-block:: bash

    python repro/tables/table26_patience.py --profile quick
"""
from mzattn.repro.core.spec import Claim, TableSpec
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.report.claims import compare, verdict, within
from mzattn.repro.tables.transfer import MZ, ROWS, profiles, resnet_column

MODELS = (MZ, "ST-Large", "HyperNet", "LinearAttn")
ROWS26 = tuple(row for label in MODELS for row in ROWS if row.label == label)
PATIENCES = (20, 100, 300)
COLUMNS = tuple(resnet_column(f"patience={p}", "resnet50", "furthest", patience=p)
                for p in PATIENCES)


def _plateau(results, margin: float = 0.002):
    last = f"patience={PATIENCES[-1]}"
    return verdict(*(within(results, [(row, f"patience={p}"), (row, last)], margin)
                     for row in MODELS for p in PATIENCES[:-1]))


CLAIMS = (
    Claim("Every model converges to within 0.002 R² of its patience-300 plateau", _plateau),
    Claim("MZAttn-Full leads ST-Large, HyperNet and LinearAttn at every patience",
          lambda r: verdict(*(compare(r, (MZ, f"patience={p}"), ">", (row, f"patience={p}"))
                              for p in PATIENCES for row in MODELS[1:]))),
)

SPEC = TableSpec(
    key="table26",
    title="Patience sweep on ResNet-50 k-center furthest (R², 80 epochs)",
    rows=ROWS26, columns=COLUMNS,
    profiles=profiles(smoke_rows=(MZ, "ST-Large"), smoke_columns=("patience=20",),
                      quick_rows=(MZ, "ST-Large"), quick_columns=None,
                      full_seeds=(0, 1, 2, 3, 4)),
    paper="table26", claims=CLAIMS,
    notes="Only the early-stopping patience changes between columns; 80 epochs, so patience "
          "300 never stops early. Quick profile: 1K/250/500 images, 15 epochs (the patience "
          "of each column still applies), one seed, 2 models. Smoke: scikit-learn digits "
          "through a random-weight ResNet-50 (no download).",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
