r"""Table 33 (App. D.5.6): dimension scaling of the k-center furthest cost
($k = 5$, $n = 16$, $R^2$) from ResNet-18 ($d = 256$) to ResNet-50
($d = 1024$) layer-3 features of CIFAR-100; ResNet-50 with early-stopping
patience 300.

Needs CIFAR-100 and the torchvision ImageNet ResNet-18/50 weights; the smoke
profile runs offline on scikit-learn digits through random-weight ResNets.

.. code-block:: bash

    python repro/tables/table33_dimension_scaling.py --profile quick
"""
from mzattn.repro.core.spec import Claim, TableSpec, transposed
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.tables.transfer import MZ, ROWS, profiles, rank_claim, resnet_column

R18, R50 = "ResNet-18 (d=256)", "ResNet-50 (d=1024)"
COLUMNS = (
    resnet_column(R18, "resnet18", "furthest"),
    resnet_column(R50, "resnet50", "furthest", patience=300),
)


CLAIMS = (
    *(Claim(f"MZAttn-Full ranks first on {column} features (we rank the models run)",
            rank_claim((column,), lambda ranks: ranks[0][0] == 1, column))
      for column in (R18, R50)),
)

SPEC = TableSpec(
    key="table33",
    title="Dimension scaling on the k-center furthest cost (ResNet-18 d=256 vs ResNet-50 "
          "d=1024, R²)",
    rows=ROWS, columns=COLUMNS,
    profiles=profiles(smoke_rows=("Standard", MZ), smoke_columns=(R18,),
                      quick_rows=("Standard", "ST-Large", MZ), quick_columns=(R18,),
                      full_seeds=(0, 1, 2, 3, 4)),
    paper="table33", paper_cell=transposed, claims=CLAIMS,
    notes="ResNet-50 trains with patience 300 (as the paper), ResNet-18 with the default 20; "
          "80 epochs (App. D.4.7). Quick profile: ResNet-18 only, 1K/250/500 images, "
          "15 epochs, one seed, 3 models. Smoke: ResNet-18 only, scikit-learn digits "
          "through a random-weight ResNet-18 (no download).",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
