r"""Table 31 (App. D.5.6): systematic transfer study. Geometric targets (MEB
radius, hull volume, MST weight, k-center furthest cost) on point clouds
built from MNIST, Fashion-MNIST and CIFAR-100 in three tiers of per-sample
rank; the paper reports MZAttn-Full's rank among 7 models per
(construction, target) cell, we report every model's $R^2$ and derive the
ranks in the claims.

Tier 1: on-pixel coordinates ($d = 2$), with a per-set affine perturbation
(TDOF-4) or 3-image mixtures; tier 2: 8-d pixel lifts and CIFAR-100 4x4
patch features; tier 3: ResNet-18 layer-3 features ($d = 256$). Needs the
image datasets (``<data root>/images/raw``) and the ResNet-18 weights; the
smoke profile runs offline on scikit-learn's digits.

.. code-block:: bash

    python repro/tables/table31_transfer.py --profile quick
"""
from mzattn.repro.core.spec import Claim, Column, TableSpec
from mzattn.repro.engine.runner import main as run_main
from mzattn.repro.tables.transfer import (
    MZ,
    ROWS,
    mean_relative_rank,
    profiles,
    rank_claim,
    resnet_column,
)

#: Paper column label -> geometric target name.
TARGETS = {"MEB": "meb", "Hull": "hull", "MST": "mst", "Furthest": "furthest"}
AFFINE_SCALE = 0.3  # the paper gives no scale for its TDOF-4 perturbation
VARIABLE_SIZE = (16, 64)  # patches kept per set (of 64); the paper gives no range
MIXTURE = 3

#: (paper row label, tier, pixel-cloud options or None for ResNet features,
#: paper columns with a rank).
CONSTRUCTIONS = (
    ("MNIST raw pixel", 1, {"source": "mnist"}, ("MEB", "Hull")),
    ("MNIST + affine (TDOF-4)", 1, {"source": "mnist", "affine_scale": AFFINE_SCALE},
     ("MEB",)),
    ("MNIST 3-digit mixture", 1, {"source": "mnist", "mixture": MIXTURE},
     ("MEB", "Hull", "MST")),
    ("Fashion-MNIST pixel", 1, {"source": "fashion_mnist"}, ("Hull", "Furthest")),
    ("Fashion-MNIST + affine", 1, {"source": "fashion_mnist", "affine_scale": AFFINE_SCALE},
     ("Hull",)),
    ("Fashion-MNIST 3-digit mix", 1, {"source": "fashion_mnist", "mixture": MIXTURE},
     ("MST",)),
    ("CIFAR-100 raw pixel", 1, {"source": "cifar100"}, ("Hull", "Furthest")),
    ("MNIST 8D polynomial lift", 2, {"source": "mnist", "construction": "lift"},
     ("MEB", "Hull")),
    ("CIFAR-100 4×4 patch features", 2, {"source": "cifar100", "construction": "patches"},
     ("MEB", "Hull")),
    ("CIFAR-100 variable-size patches", 2, {"source": "cifar100", "construction": "patches",
                                            "num_points": VARIABLE_SIZE}, ("MEB", "MST")),
    ("CIFAR-100 class-mixture patches", 2, {"source": "cifar100", "construction": "patches",
                                            "mixture": MIXTURE}, ("MEB",)),
    ("CIFAR-100 ResNet-18 layer-3", 3, None, ("MST", "Furthest")),
)


def _column(construction: str, options: dict | None, target: str) -> Column:
    label = f"{construction} / {target}"
    if options is None:
        return resnet_column(label, "resnet18", TARGETS[target])
    return Column(label, "pixel_clouds", {**options, "targets": TARGETS[target]},
                  normalize=True)


COLUMNS = tuple(_column(name, options, target)
                for name, _, options, targets in CONSTRUCTIONS for target in targets)
TIERS = {tier: tuple(f"{name} / {target}" for name, t, _, targets in CONSTRUCTIONS
                     if t == tier for target in targets) for tier in (1, 2, 3)}
FIRST = COLUMNS[0].label

CLAIMS = (
    Claim("Tiers 1-2 (low/medium per-sample rank): no systematic MZAttn-Full advantage "
          "(paper mean rank 3.9 of 7 on both, null 4); we test a mean relative rank "
          "(rank-1)/(k-1) >= 0.25 over the cells run (0.5 = null, 0 = always first)",
          rank_claim(TIERS[1] + TIERS[2], lambda r: mean_relative_rank(r) >= 0.25,
                     "tiers 1-2")),
    Claim("Tier 3: the only rank-1 cell is the k-center furthest cost on ResNet-18 layer-3 "
          "features", rank_claim(("CIFAR-100 ResNet-18 layer-3 / Furthest",),
                                 lambda r: r[0][0] == 1, "tier 3 furthest")),
)

SPEC = TableSpec(
    key="table31",
    title="Systematic transfer study: geometric targets on pixel, patch and ResNet-feature "
          "point clouds (R²; the paper prints MZAttn-Full's rank)",
    rows=ROWS, columns=COLUMNS,
    profiles=profiles(smoke_rows=("Standard", MZ), smoke_columns=(FIRST,),
                      quick_rows=("Standard", "ST-Large", "LinearAttn", MZ),
                      quick_columns=TIERS[1][:3], full_seeds=(0, 1, 2)),
    paper="table31", paper_cell=lambda row, column: None, claims=CLAIMS,
    notes="The paper prints only MZAttn-Full's rank per cell (its R² values are in "
          "supplementary files we do not have), so the paper column stays empty and the "
          "claims rank our models. Choices where the paper is silent: on-pixel threshold 0.5, "
          f"affine scale {AFFINE_SCALE} (A = I + U(-s, s)^(2x2)), {MIXTURE}-image mixtures of "
          f"distinct classes, variable-size patch sets of {VARIABLE_SIZE[0]}-"
          f"{VARIABLE_SIZE[1]} patches, validation = 10% of the training images, 80 epochs. "
          "The paper counts 11 tier-1 and 5 tier-2 cells; its grid prints 12 and 7, all run "
          "here. Quick profile: the first three MNIST cells, 1K/250/500 sets, 15 epochs, one "
          "seed, 4 models. Smoke: scikit-learn's digits instead of every image source.",
)

if __name__ == "__main__":
    raise SystemExit(run_main(SPEC))
