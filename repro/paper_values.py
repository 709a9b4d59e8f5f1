r"""Reference numbers of every table of the paper, transcribed once.

Every table of "Matrix Zonotopic Attention: A Context-Adaptive Value
Projection for Set Transformers" (Tables 1--33) and the numbers quoted for
Figure 1 (right) and in the text of App. D.5.6 (negative transfer) are
written below exactly as printed, one Python tuple per printed row (per
quoted number for the text), and parsed into :class:`PaperTable` objects at
import time. Reports compare against the paper only through :func:`paper_table`,
:func:`paper_value` and :func:`column_metric`.

Conventions:

* Numbers keep the paper's printed units: accuracies in percent
  (``77.5 ± 0.6%`` has ``mean=77.5``), the Task D MSE of Table 2 in units of
  :math:`10^{-2}`, ratios as the factor (``6.6×`` has ``mean=6.6``),
  parameter counts as integers (``208K`` is ``208_000``).
* Cells printed as ``–``/``—`` are omitted from :attr:`PaperTable.rows`.
* A standard deviation printed as an upper bound (``± <.001``) is stored as
  :obj:`None`; the bound stays in :attr:`PaperValue.text`. A mean printed as a
  bound (``≤ 0.025``, ``≥95%``) is stored as the bound.
* Annotations such as ``(1st)`` or ``(unstable)`` and footnote marks are kept
  in :attr:`PaperValue.text` only (footnote marks ``†``/``‡`` are dropped).
* Column labels name the metric (``'A MSE'``, ``'A R2'``) only in tables whose
  columns mix metrics; elsewhere the paper's redundant ``R^2`` is dropped
  (Table 3 has ``'d=8'``, not ``'d=8 R2'``).
* Tables whose columns mix metrics have ``metric='mixed'``; their
  :attr:`PaperTable.higher_is_better` is the direction of the table's
  headline metric and :func:`column_metric` gives each column's metric.
* :attr:`PaperTable.params` is keyed by model label: the row label, or the
  column label in tables whose models are columns (Table 27).

Transcription notes (ambiguities of the text extraction):

* Table 2, Deep Sets row: the extraction prints only
  ``– | 490.2 ± 33.4 | 0.652 ± 0.024 | – | 40.6 ± 1.0% | 2.05 ± 0.38 |
  0.722 ± 0.052 | 36K``. The MSE/:math:`R^2` pair is placed on Task B (its
  implied target variance, :math:`490.2 / (1 - 0.652) \approx 1408`, matches
  Task B's, :math:`138.0 / (1 - 0.901) \approx 1394`, not Task F's) and
  Task D likewise; ``40.6 ± 1.0%`` is read as the ModelNet40 (Task C) cell,
  the first column after the dashes, leaving ScanObjectNN (Task E) empty.
* Table 12 prints ``Model | Layers``; its rows are labelled
  ``'Set Transformer (2 layers)'`` etc. so that labels stay unique.
* Table 31's Tier-3 MEB cell is printed ``(unstable)`` without a rank and is
  omitted.
"""
import re
from dataclasses import dataclass

__all__ = [
    'PaperValue',
    'PaperTable',
    'TABLES',
    'paper_table',
    'paper_value',
    'column_metric',
]


@dataclass(frozen=True)
class PaperValue:
    r"""One printed cell: its mean, its standard deviation when printed, and
    the cell as printed (e.g. ``'0.995 ± 0.002'``, ``'6.6×'``)."""
    mean: float
    std: float | None = None
    text: str = ''


@dataclass(frozen=True)
class PaperTable:
    r"""One table of the paper.

    Attributes:
        key (str): ``'table1'`` ... ``'table33'``, ``'figure1'`` or
            ``'negative_transfer'``.
        caption (str): Short caption from the paper.
        metric (str): The metric of every column, or ``'mixed'`` (see
            :func:`column_metric`).
        higher_is_better (bool): Direction of the table's headline metric.
        seeds (int, optional): Number of seeds, :obj:`None` where the paper
            gives a range or none.
        columns (tuple[str, ...]): Column labels, normalised to plain text.
        rows (dict[str, dict[str, PaperValue]]): Row label → column → value,
            missing cells omitted.
        params (dict[str, int]): Model label → parameter count, where given.
        claims (tuple[str, ...]): The table's headline claims, one sentence
            each, from its caption or the text.
    """
    key: str
    caption: str
    metric: str
    higher_is_better: bool
    seeds: int | None
    columns: tuple[str, ...]
    rows: dict[str, dict[str, PaperValue]]
    params: dict[str, int]
    claims: tuple[str, ...]


# ----------------------------------------------------------------------------
# Parsing of printed cells

#: Header marker of a parameter-count column (parsed into ``params``).
_PARAMS = '#params'
#: Printed cells that mean "no value".
_MISSING = ('', '–', '—')
#: Metric name → whether higher is better (:obj:`None`: descriptive column).
_DIRECTIONS: dict[str, bool | None] = {
    'r2': True,
    'mse': False,
    'mae': False,
    'accuracy': True,
    'mse_ratio': True,
    'ratio': False,
    'rank': False,
    'spearman': True,
    'pearson': True,
    'fraction_pct': True,
    'ece': False,
    'nll': False,
    'seconds': False,
    'passes': False,
    'models': False,
    'mse_change_pct': False,
    'abs_error': False,
    'ihw': None,
    'count': None,
    'params': None,
    'dimension': None,
}
_NUMBER = re.compile(r'-?\d*\.?\d+')
_NOTE = re.compile(r'\s*\([^)]*\)$')
_SCALE = {'K': 1_000, 'M': 1_000_000}
_COLUMN_METRICS: dict[str, dict[str, str]] = {}


def _number(text: str) -> float:
    r"""The first number of :obj:`text`, scaled by a trailing ``K``/``M``."""
    match = _NUMBER.search(text)
    if match is None:
        raise ValueError(f"cell '{text}' holds no number")
    return float(match.group()) * _SCALE.get(text.rstrip()[-1], 1)


def _cell(text: str) -> PaperValue:
    r"""Parses one printed cell such as ``'-0.098 ± <.001'`` or
    ``'0.795 ± 0.001 (1st)'``."""
    mean, _, std = _NOTE.sub('', text).partition('±')
    spread = None if not std or '<' in std else _number(std)
    return PaperValue(mean=_number(mean), std=spread, text=text)


def _count(text: str) -> int:
    r"""Parses a printed parameter count such as ``'208K'`` or ``'1.3M'``."""
    return round(_number(text))


def _table(
    key: str,
    caption: str,
    metric: str | tuple[str, ...],
    higher_is_better: bool,
    seeds: int | None,
    header: tuple[str, ...],
    rows: tuple[tuple[str, ...], ...],
    claims: tuple[str, ...],
    params: dict[str, int] | None = None,
) -> PaperTable:
    r"""Builds a :class:`PaperTable` from its printed rows.

    :obj:`header` starts with the row-header label; :obj:`_PARAMS` marks a
    parameter-count column. A tuple :obj:`metric` gives one metric per
    (non-parameter) column and makes the table ``'mixed'``.
    """
    columns = tuple(c for c in header[1:] if c != _PARAMS)
    unknown = set(metric if isinstance(metric, tuple) else (metric,)) - set(_DIRECTIONS)
    if unknown:
        raise ValueError(f'{key}: metric names {sorted(unknown)} are not in _DIRECTIONS')
    if isinstance(metric, tuple):
        if len(metric) != len(columns):
            raise ValueError(f'{key}: {len(metric)} metrics for {len(columns)} columns')
        _COLUMN_METRICS[key] = dict(zip(columns, metric, strict=True))
        metric = 'mixed'
    values: dict[str, dict[str, PaperValue]] = {}
    counts = dict(params or {})
    for label, *cells in rows:
        if len(cells) != len(header) - 1 or label in values:
            raise ValueError(f"{key}: row '{label}' is malformed or repeated")
        values[label] = {}
        for name, cell in zip(header[1:], cells, strict=True):
            if cell in _MISSING:
                continue
            if name != _PARAMS:
                values[label][name] = _cell(cell)
            elif counts.setdefault(label, _count(cell)) != _count(cell):
                raise ValueError(f"{key}: row '{label}' has conflicting parameter counts")
    return PaperTable(key, caption, metric, higher_is_better, seeds, columns, values, counts,
                      claims)


# ----------------------------------------------------------------------------
# Main body: Tables 1-7 and Figure 1

_FIGURE1 = _table(
    'figure1',
    'Figure 1 (right): MEB radius (d=8, 5 seeds), parameter-matched PMA-pool baselines '
    'vs. MZAttn.',
    'r2', True, 5,
    ('Model', 'd=8'),
    (
        ('PMA-pool baselines (all six)', '≤ 0.025'),
        ('HyperNet (r=d_k=64)', '≤ 0.025'),
        ('MZAttn', '0.69'),
    ),
    claims=(
        'On MEB radius (d=8, 5 seeds) all six parameter-matched PMA-pool baselines stay at '
        'R2 <= 0.025 while MZAttn reaches R2 = 0.69.',
        "HyperNet at r = d_k = 64 (1.3M params, 3.6x MZAttn's budget) does not close the gap: "
        'capacity is not the bottleneck.',
    ),
    params={'HyperNet (r=d_k=64)': 1_300_000},
)

_TABLE1 = _table(
    'table1',
    'Depth-separation verification on the quadratic-TDOF target (Eq. 4; mean ± std, '
    '3 seeds).',
    ('r2', 'r2', 'mse_ratio'), True, 3,
    ('L', 'MZAttn-1L R2', 'ST-4L R2', 'MSE ratio'),
    (
        ('4', '0.995 ± 0.002', '0.970 ± 0.005', '6.6×'),
        ('8', '0.988 ± 0.001', '0.809 ± 0.011', '15.4×'),
        ('16', '0.950 ± 0.001', '0.618 ± 0.017', '7.6×'),
        ('24', '0.944 ± 0.011', '0.547 ± 0.020', '8.0×'),
        ('32', '0.908 ± 0.016', '0.396 ± 0.001', '6.5×'),
    ),
    claims=(
        "Across L in {4, 8, 16, 24, 32} the four-layer Set Transformer's test R2 degrades "
        'from 0.97 to 0.40 while a single MZAttn layer holds R2 >= 0.90, with a 6-15x '
        'residual-MSE gap (Sec. 3.2).',
        'EGNN collapses to R2 ≈ 0 for every L because the target depends on a fixed '
        'coordinate frame (Sec. 3.2).',
    ),
)

_TABLE2 = _table(
    'table2',
    'Main results across seven synthetic and point-cloud benchmarks (Tasks A-G); mean ± std '
    'over 3-5 seeds; ST + FiLM (225K) and Standard Set Transformer (208K) are '
    'smaller-budget reference rows.',
    ('mse', 'r2', 'mse', 'r2', 'mse', 'r2', 'mse', 'r2', 'accuracy', 'accuracy', 'mse', 'r2'),
    False, None,
    ('Model', 'A MSE', 'A R2', 'B MSE', 'B R2', 'F MSE', 'F R2', 'G MSE', 'G R2', 'C MN40',
     'E Scan', 'D MSE (x10^-2)', 'D R2', _PARAMS),
    (
        ('Deep Sets', '–', '–', '490.2 ± 33.4', '0.652 ± 0.024', '–', '–', '–', '–',
         '40.6 ± 1.0%', '–', '2.05 ± 0.38', '0.722 ± 0.052', '36K'),
        ('Set Transformer', '3.43 ± 0.09', '0.811 ± 0.005', '138.0 ± 10.3', '0.901 ± 0.007',
         '487.5 ± 31.1', '0.904 ± 0.006', '209.8 ± 1.8', '0.712 ± 0.002', '77.5 ± 0.6%',
         '71.6 ± 2.2%', '2.60 ± 0.24', '0.646 ± 0.032', '208K'),
        ('ST + FiLM', '3.77 ± 0.26', '0.792 ± 0.014', '48.0 ± 7.9', '0.966 ± 0.006',
         '490.5 ± 17.8', '0.904 ± 0.003', '232.7 ± 12.5', '0.681 ± 0.017', '78.4 ± 0.8%',
         '68.9 ± 3.2%', '2.77 ± 0.21', '0.624 ± 0.029', '225K'),
        ('ST-Large', '3.36 ± 0.10', '0.815 ± 0.005', '106.5 ± 5.3', '0.924 ± 0.004',
         '423.2 ± 51.8', '0.917 ± 0.010', '168.7 ± 23.0', '0.769 ± 0.032', '79.9 ± 1.0%',
         '72.9 ± 2.4%', '–', '–', '362K'),
        ('Perceiver', '3.47 ± 0.05', '0.809 ± 0.003', '136.2 ± 17.5', '0.902 ± 0.013',
         '872.1 ± 163.8', '0.829 ± 0.032', '249.0 ± 4.7', '0.659 ± 0.006', '75.0 ± 0.3%',
         '67.3 ± 1.2%', '–', '–', '341K'),
        ('HyperNet', '3.51 ± 0.01', '0.806 ± 0.001', '76.1 ± 5.7', '0.945 ± 0.004',
         '1373.0 ± 141.6', '0.730 ± 0.028', '291.2 ± 9.2', '0.601 ± 0.013', '75.5 ± 1.7%',
         '66.1 ± 0.9%', '–', '–', '360K'),
        ('MZAttn (ours)', '2.92 ± 0.09', '0.839 ± 0.005', '58.4 ± 11.9', '0.958 ± 0.009',
         '241.2 ± 3.0', '0.953 ± 0.001', '99.4 ± 1.9', '0.864 ± 0.003', '78.1 ± 0.7%',
         '69.4 ± 3.7%', '2.10 ± 0.16', '0.715 ± 0.022', '365K'),
    ),
    claims=(
        'MZAttn is best on all four high-TDOF tasks: 13% MSE reduction vs. ST-Large on set '
        'regression (A), 45% on set matching (B), 51% over FiLM on rotation matching (F) and '
        '41% over ST-Large on MST weight (G).',
        "On MST weight (G) MZAttn's seed std is ±1.9 vs. ±23.0 for ST-Large.",
        'On point-cloud classification ST-Large is best (79.9% / 72.9%) with MZAttn within '
        '1-3 pp (78.1% / 69.4%).',
        'On few-shot retrieval (D) Deep Sets (R2 = 0.722) and MZAttn (R2 = 0.715) tie and both '
        'exceed Standard attention (0.646) and FiLM (0.624).',
    ),
)

_TABLE3 = _table(
    'table3',
    'MEB radius prediction (R2, mean ± std, 5 seeds); mixtures of Gaussians with n in '
    '[10,30]; LA-ST: linear attention; Mamba + PMA: Mamba (S6) encoder with PMA pooling.',
    'r2', True, 5,
    ('Model', _PARAMS, 'd=8', 'd=16', 'd=32'),
    (
        ('Standard', '208K', '0.025 ± 0.009', '0.020 ± 0.005', '0.006 ± 0.012'),
        ('ST-Large', '362K', '0.018 ± 0.001', '0.012 ± 0.015', '-0.006 ± 0.011'),
        ('HyperNet (r=8)', '360K', '0.004 ± 0.013', '0.005 ± 0.012', '-0.001 ± 0.001'),
        ('HyperNet (r=64, full key-rank)', '1.3M', '0.011 ± 0.012', '0.001 ± 0.009',
         '0.000 ± 0.002'),
        ('Perceiver', '341K', '0.024 ± 0.006', '0.016 ± 0.028', '0.010 ± 0.010'),
        ('LA-ST (Linear Attn.)', '359K', '0.017 ± 0.016', '0.015 ± 0.009', '0.001 ± 0.002'),
        ('Standard (mean-pool head)', '140K', '0.784 ± 0.004', '0.647 ± 0.363',
         '0.449 ± 0.261'),
        ('Mamba + PMA', '645K', '0.713 ± 0.025', '0.617 ± 0.041', '0.142 ± 0.134'),
        ('MZAttn-Full', '368K', '0.691 ± 0.012', '0.629 ± 0.023', '0.378 ± 0.030'),
    ),
    claims=(
        'Every parameter-matched baseline using PMA pooling, including LA-ST, fails at '
        'R2 <= 0.025, whereas MZAttn-Full reaches a 28-155x gap (median ≈ 40x).',
        'HyperNet at r = d_k = 64 (1.3M params, 3.6x budget) leaves R2 within ±0.012 of zero.',
        'Mamba + PMA matches MZAttn-Full at d=8 (0.713 ± 0.025) but degrades to '
        "0.142 ± 0.134 at d=32 vs. MZAttn's stable 0.378 ± 0.030.",
        'MZAttn-Large (Appendix D.4.1, not in the table) reaches R2 = 0.621 ± 0.013 at d=8 and, '
        'with 10 seeds and a 10-epoch warmup, 0.488 ± 0.099 at d=16 and 0.221 ± 0.074 at d=32.',
    ),
)

_TABLE4 = _table(
    'table4',
    'Rotation matching scaling (R2, mean over 3 seeds).',
    'r2', True, 3,
    ('Model', 'd=16', 'd=32', 'd=64', 'd=128', 'd=256', 'd=512'),
    (
        ('Standard', '0.084', '-0.002', '-1.20', '-21.54', '-61.69', '-165.4'),
        ('ST-Large', '0.285', '-0.001', '-0.023', '-9.47', '-50.15', '-145.1'),
        ('Perceiver', '-0.001', '-0.006', '-1.17', '-19.18', '-61.52', '-165.2'),
        ('HyperNet', '0.020', '-0.005', '-1.10', '-16.51', '-61.48', '-163.0'),
        ('MZAttn', '0.826', '0.519', '0.071', '-0.001', '-0.005', '-61.6'),
    ),
    claims=(
        'Context-rigid baselines collapse to large negative R2 as d grows while MZAttn tracks '
        'the mean predictor up to d=256.',
        "At d=512 all architectures diverge but MZAttn's MSE stays 2.3x smaller than the "
        'next-best.',
        'At d=16 MZAttn reaches R2 = 0.826 vs. 0.285 for ST-Large, a 76% MSE reduction.',
    ),
)

_TABLE5 = _table(
    'table5',
    'HyperNet rank extended ablation (R2, mean ± std, 3 seeds) on collapse-exhibiting tasks; '
    'Hull d=9 MZ-Full (0.003) is within seed std of zero.',
    'r2', True, 3,
    ('Task (d)', 'HyperNet r=16', 'HyperNet r=32', 'HyperNet r=64', 'MZAttn-Full'),
    (
        ('Hull d=3', '0.191 ± .008', '0.190 ± .029', '0.204 ± .020', '0.804 ± .014'),
        ('Hull d=6', '-0.214 ± .013', '-0.203 ± .002', '-0.214 ± .027', '0.103 ± .020'),
        ('Hull d=9', '-0.095 ± .001', '-0.098 ± <.001', '-0.100 ± .002', '0.003 ± .006'),
        ('MEB d=8', '0.012 ± .006', '0.022 ± .006', '0.011 ± .012', '0.691 ± .012'),
        ('MEB d=16', '0.007 ± .003', '0.000 ± .008', '0.001 ± .009', '0.629 ± .023'),
        ('MEB d=32', '-0.020 ± .029', '-0.000 ± <.001', '0.000 ± .002', '0.378 ± .030'),
        ('MST d=64', '-1.96 ± .31', '-2.06 ± .28', '-1.92 ± .18', '0.58 ± .01'),
        ('MST d=128', '-3.09 ± .29', '-3.00 ± .17', '-2.80 ± .17', '0.48 ± .02'),
        ('MST d=256', '-3.99 ± .15', '-3.78 ± .05', '-3.97 ± .17', '0.38 ± .04'),
    ),
    claims=(
        'Raising the HyperNet rank to r in {16, 32, 64} stays within 0.13 of r=16 everywhere '
        'and does not close the gap: the best HyperNet R2 stays 0.6+ behind MZAttn-Full '
        '(Hull d=3: 0.204 vs. 0.804; MEB d=8: 0.022 vs. 0.691).',
    ),
)

_TABLE6 = _table(
    'table6',
    'MZ parameter efficiency (R2, mean, 3 seeds).',
    'r2', True, 3,
    ('Model', 'Max', 'RotMatch', 'MST', _PARAMS),
    (
        ('Standard', '0.812', '0.706', '0.719', '208K'),
        ('MZ-Slim (n_g=2, L=1)', '0.871', '0.919', '0.835', '333K'),
        ('MZ-Med (n_g=4, L=2)', '0.863', '0.933', '0.857', '344K'),
        ('MZ-Full (n_g=8, L=4)', '0.850', '0.936', '0.852', '368K'),
    ),
    claims=(
        'Even at n_g=2, L=1 MZ retains its high-TDOF advantage: structure dominates parameter '
        'count.',
        "MZ-Slim (333K, 1.6x Standard) beats Standard on Max (0.871 vs. 0.812), MST (41% MSE "
        'reduction) and rotation matching (72% MSE reduction).',
    ),
)

_TABLE7 = _table(
    'table7',
    'MZAttn vs. EGNN (R2, 3 seeds): EGNN dominates on rotation/translation-invariant targets; '
    'MZAttn dominates on the non-equivariant quadratic-TDOF target.',
    'r2', True, 3,
    ('Model', 'Rot. matching d=8', 'Rot. matching d=32', 'Rot. matching d=64',
     'Hull volume d=3', 'Hull volume d=9', 'MEB radius d=8', 'MEB radius d=32', 'CN d=8',
     'Mah d=8', 'PCA d=16', 'Quadratic TDOF L=4', 'Quadratic TDOF L=8', 'Quadratic TDOF L=16'),
    (
        ('ST-Large', '0.92', '0.00', '-0.02', '0.50', '-0.09', '0.02', '-0.01', '0.90',
         '-0.004', '0.11', '0.83', '0.79', '0.78'),
        ('MZAttn (ours)', '0.95', '0.52', '0.07', '0.80', '0.003', '0.69', '0.38', '0.97',
         '-0.022', '0.58', '0.96', '0.90', '0.90'),
        ('EGNN', '0.99', '0.99', '0.98', '0.95', '0.85', '0.66', '0.78', '0.99', '0.40', '0.93',
         '-0.002', '0.000', '0.006'),
    ),
    claims=(
        'EGNN matches or outperforms MZAttn on every rotation-invariant task (rotation matching '
        'd=8: 0.99 vs. 0.95; MEB d=32: 0.78 vs. 0.38; Mahalanobis: 0.40 vs. -0.02).',
        "On the quadratic-TDOF target EGNN's invariant output forces R2 ≈ 0 while MZAttn "
        'reaches R2 >= 0.90.',
        'EGNN is parameter-matched at ~303K (h_dim=140, 4 message-passing layers).',
    ),
)

# ----------------------------------------------------------------------------
# Appendix D.1: architecture and ablation studies (Tables 8-13)

_TABLE8 = _table(
    'table8',
    'Ablation on the number of MZ generator matrices n_mz on the quadratic-TDOF target '
    '(mean ± std, 3 seeds).',
    'r2', True, 3,
    ('n_mz', 'L=16', _PARAMS, 'L=32', _PARAMS),
    (
        ('1', '0.978 ± 0.004', '247K', '0.937 ± 0.014', '247K'),
        ('2', '0.976 ± 0.012', '252K', '0.959 ± 0.019', '252K'),
        ('4', '0.956 ± 0.011', '260K', '0.961 ± 0.007', '260K'),
        ('8', '0.960 ± 0.011', '278K', '0.949 ± 0.021', '278K'),
        ('16', '0.948 ± 0.016', '313K', '0.923 ± 0.011', '313K'),
        ('32', '0.943 ± 0.002', '383K', '0.907 ± 0.010', '383K'),
    ),
    claims=(
        'Even n_mz = 1 (R2 = 0.978 at L=16) exceeds deep standard Set Transformers; the curve '
        'plateaus once the generator count exceeds the target TDOF.',
    ),
)

_TABLE9 = _table(
    'table9',
    'Ablation on zonotope generators n_g (set matching, seed 42).',
    ('mse', 'mae', 'r2'), False, 1,
    ('n_g', 'MSE', 'MAE', 'R2'),
    (
        ('2', '45.80', '3.50', '0.967'),
        ('4', '26.74', '3.33', '0.981'),
        ('8', '32.46', '3.39', '0.977'),
        ('16', '55.05', '4.47', '0.961'),
    ),
    claims=('Performance peaks at n_g = 4 and degrades for larger budgets due to overfitting.',),
)

_TASK_AB = ('A MSE', 'A R2', 'B MSE', 'B R2')

_TABLE10 = _table(
    'table10',
    'Ablation: incorporating generator information (IHW) into Q/K scoring (MZ-GenQK) on '
    'set regression (A) and set matching (B).',
    ('mse', 'r2', 'mse', 'r2'), False, None,
    ('Model', *_TASK_AB, _PARAMS),
    (
        ('MZAttn (centers-only Q/K)', '2.19 ± 0.09', '0.879 ± 0.005', '55.0 ± 10.5',
         '0.961 ± 0.008', '365K'),
        ('MZ-GenQK (gen info in Q/K)', '1.64 ± 0.13', '0.909 ± 0.007', '68.8 ± 5.6',
         '0.951 ± 0.004', '415K'),
    ),
    claims=(
        'On Task A MZ-GenQK improves R2 from 0.879 to 0.909, but on Task B it degrades MSE from '
        '55.0 to 68.8 (+25%), so centers-only scoring is the default.',
    ),
)

_TABLE11 = _table(
    'table11',
    'HyperNet rank ablation on set regression (A) and set matching (B) (mean ± std over '
    '3 seeds, all parameter-matched at ~360-370K).',
    ('mse', 'r2', 'mse', 'r2'), False, 3,
    ('Model', *_TASK_AB, _PARAMS),
    (
        ('HyperNet (r=8)', '3.51 ± 0.01', '0.806 ± 0.001', '76.1 ± 5.7', '0.945 ± 0.004',
         '360K'),
        ('HyperNet (r=16)', '3.50 ± 0.02', '0.807 ± 0.001', '95.9 ± 8.0', '0.931 ± 0.006',
         '370K'),
        ('HyperNet (r=32)', '3.54 ± 0.02', '0.805 ± 0.001', '133.7 ± 8.0', '0.904 ± 0.006',
         '359K'),
        ('MZAttn', '2.19 ± 0.09', '0.879 ± 0.005', '55.0 ± 10.5', '0.961 ± 0.008', '365K'),
    ),
    claims=(
        'Increasing the HyperNet rank from 8 to 32 does not close the gap to MZAttn: Task A R2 '
        'stays at ~0.806 while Task B MSE increases from 76.1 to 133.7, a 76% degradation.',
    ),
)

_TABLE12 = _table(
    'table12',
    'Depth separation: 1-layer MZAttn vs. D-layer standard Set Transformer (mean ± std over '
    '3 seeds).',
    ('mse', 'r2'), False, 3,
    ('Model', 'MSE', 'R2', _PARAMS),
    (
        ('MZAttn (1 layer)', '42.3 ± 1.6', '0.969 ± 0.001', '244K'),
        ('Set Transformer (1 layer)', '53.3 ± 0.7', '0.961 ± 0.001', '140K'),
        ('Set Transformer (2 layers)', '57.3 ± 4.6', '0.958 ± 0.003', '208K'),
        ('Set Transformer (3 layers)', '68.6 ± 16.4', '0.950 ± 0.012', '276K'),
        ('Set Transformer (4 layers)', '59.6 ± 3.7', '0.956 ± 0.003', '344K'),
        ('Set Transformer (5 layers)', '63.4 ± 8.3', '0.953 ± 0.006', '412K'),
        ('Set Transformer (6 layers)', '57.1 ± 5.9', '0.958 ± 0.004', '480K'),
    ),
    claims=(
        'A 1-layer MZAttn (244K params) outperforms standard Set Transformers of every depth up '
        'to 6 layers (480K params, 2x more parameters).',
    ),
)

_TABLE13 = _table(
    'table13',
    'MZ-attention in a standard Transformer with positional encoding (R2).',
    ('r2', 'r2', 'params', 'params'), True, None,
    ('L', 'MZ-Transformer', 'Std-Transformer', 'MZ params', 'Std params'),
    (
        ('4', '.9998 ± <.001', '.9982 ± <.001', '83K', '44K'),
        ('8', '.9981 ± <.001', '.9864 ± .001', '87K', '44K'),
        ('16', '.9964 ± .001', '.9619 ± .002', '96K', '44K'),
        ('24', '.9963 ± <.001', '.9526 ± .007', '105K', '44K'),
        ('32', '.9957 ± .002', '.9313 ± .003', '114K', '44K'),
    ),
    claims=(
        'MZ-attention also achieves R2 > 0.99 in a sequence Transformer with positional '
        'encoding.',
    ),
)

# ----------------------------------------------------------------------------
# Appendix D.2-D.3: robustness, generalisation and uncertainty (Tables 14-21)

_TABLE14 = _table(
    'table14',
    'Spearman robustness to per-task TDOF perturbation (10,000 trials per scheme).',
    ('spearman', 'spearman', 'spearman', 'spearman', 'fraction_pct'), True, None,
    ('Perturbation scheme', 'rho (unperturbed)', '5th pctile rho', 'median rho',
     '95th pctile rho', 'frac. trials with rho>=0.6'),
    (
        ('Baseline (no perturbation)', 'ρ=0.7402', '–', '–', '–', '—'),
        ('±50% uniform multiplicative', '–', '0.675', '0.733', '0.791', '99.98%'),
        ('×[1/1.5,1.5] log-symmetric', '–', '0.690', '0.735', '0.781', '≥95%'),
    ),
    claims=(
        "MZAttn's MSE reduction over the best parameter-matched baseline correlates with the "
        'estimated TDOF across 18 (task, scale) settings: Spearman ρ = 0.74 (n = 18, p < 0.005; '
        'Sec. 5.3, Figure 2 right).',
        'A ±50% TDOF perturbation keeps the Spearman in [0.675, 0.791] at 5%-95%, and 9,998 of '
        '10,000 uniform trials yield ρ >= 0.6 (min ρ = 0.59).',
    ),
)

_SWEEP = ('ST MSE', 'ST R2', 'MZ MSE', 'MZ R2', 'Delta MSE')
_SWEEP_METRICS = ('mse', 'r2', 'mse', 'r2', 'mse_change_pct')

_TABLE15 = _table(
    'table15',
    'Ambiguity sweep on set matching: MSE as a function of noise sigma.',
    _SWEEP_METRICS, False, None,
    ('sigma', *_SWEEP),
    (
        ('0.05', '62.06', '0.957', '41.12', '0.971', '-33.7%'),
        ('0.1', '62.58', '0.956', '44.69', '0.969', '-28.6%'),
        ('0.3', '59.87', '0.957', '38.92', '0.972', '-35.0%'),
        ('0.5', '57.25', '0.958', '39.21', '0.971', '-31.5%'),
        ('1.0', '58.28', '0.955', '44.80', '0.965', '-23.1%'),
    ),
    claims=(
        'MZAttn consistently reduces MSE by 23-35%, with the largest advantage at moderate '
        'noise (sigma = 0.3).',
    ),
)

_TABLE16 = _table(
    'table16',
    'Size generalization on set matching: trained on sets of size 10-30, tested on larger '
    'sets.',
    _SWEEP_METRICS, False, None,
    ('Test size', *_SWEEP),
    (
        ('[10,30]', '59.87', '0.957', '38.92', '0.972', '-35.0%'),
        ('[30,50]', '24.87', '0.978', '19.85', '0.982', '-20.2%'),
        ('[50,80]', '33.86', '0.968', '24.07', '0.977', '-28.9%'),
        ('[80,120]', '34.56', '0.969', '30.40', '0.972', '-12.0%'),
    ),
    claims=(
        'MZAttn maintains its advantage across out-of-distribution sizes (12-29% MSE '
        'reduction).',
    ),
)

_TABLE17 = _table(
    'table17',
    'MST weight, normalized targets (R2, mean over 5 seeds).',
    'r2', True, 5,
    ('d', 'Standard', 'ST-Large', 'HyperNet', 'Perceiver', 'MZAttn-Full', 'MZAttn-Large'),
    (
        ('16', '0.660', '0.658', '0.495', '0.467', '0.738', '0.688'),
        ('32', '0.565', '0.567', '0.435', '0.417', '0.640', '0.617'),
        ('64', '0.539', '0.524', '0.447', '0.435', '0.594', '0.560'),
        ('128', '0.510', '0.493', '0.443', '0.401', '0.554', '0.497'),
        ('256', '0.461', '0.462', '0.373', '0.363', '0.469', '0.447'),
    ),
    claims=(
        'Under target normalization the collapse of baselines disappears (all models reach R2 '
        'in [0.37, 0.74]) and MZAttn-Full keeps a shrinking +0.04 to +0.08 R2 advantage over '
        'the best context-rigid baseline, tying only at d=256.',
    ),
)

_TABLE18 = _table(
    'table18',
    'Convex hull volume, normalised targets (R2, mean over 5 seeds).',
    'r2', True, 5,
    ('d', 'Standard', 'ST-Large', 'HyperNet', 'Perceiver', 'LA-ST', 'MZAttn-Full',
     'MZAttn-Large'),
    (
        ('3', '0.822', '0.866', '0.727', '0.725', '0.824', '0.863', '0.795'),
        ('6', '0.292', '0.412', '0.195', '0.209', '0.408', '0.555', '0.497'),
        ('9', '0.138', '0.160', '0.108', '0.119', '0.172', '0.123', '0.143'),
    ),
    claims=(
        'Under target normalisation MZAttn-Full wins at d=6 (+0.14), ties at d=3 and is within '
        'seed variance of the leader at d=9.',
    ),
)

_TABLE19 = _table(
    'table19',
    'Uncertainty calibration on set matching: samples binned by IHW.',
    ('ihw', 'abs_error', 'count'), False, None,
    ('Bin', 'IHW (mean)', 'Mean |error|', 'Count'),
    (
        ('1 (lowest)', '5.33', '1.13', '400'),
        ('2', '5.52', '2.01', '400'),
        ('3', '5.72', '3.15', '400'),
        ('4', '6.03', '4.20', '400'),
        ('5 (highest)', '6.64', '6.81', '400'),
    ),
    claims=('Higher IHW goes with higher error (Spearman r = 0.51).',),
)

_TABLE20 = _table(
    'table20',
    'Uncertainty quality comparison on set matching.',
    ('spearman', 'pearson', 'seconds', 'passes'), True, None,
    ('Method', 'Spearman', 'Pearson', 'Inference', 'Passes'),
    (
        ('MZAttn (IHW)', '0.513', '0.442', '0.10s', '1'),
        ('MC-Dropout', '0.553', '0.547', '0.37s', '10'),
        ('Deep Ensemble', '0.470', '0.542', '0.40s', '5'),
    ),
    claims=(
        'IHW achieves competitive uncertainty quality with a single forward pass at 3.7x lower '
        'cost.',
    ),
)

_TABLE21 = _table(
    'table21',
    'Uncertainty calibration on set matching (mean ± std over 3 seeds); ECE: expected '
    'calibration error; NLL: Gaussian negative log-likelihood.',
    ('mse', 'ece', 'nll', 'passes', 'models'), False, 3,
    ('Method', 'MSE', 'ECE', 'NLL', 'Passes', 'Models'),
    (
        ('MZAttn (IHW)', '55.0 ± 10.5', '0.316 ± 0.001', '5.02 ± 0.03', '1', '1'),
        ('MC-Dropout', '59.8 ± 6.1', '0.197 ± 0.030', '3.52 ± 0.43', '30', '1'),
        ('Deep Ensemble', '47.8 ± 1.1', '0.337 ± 0.019', '9.17 ± 1.96', '1', '5'),
    ),
    claims=(
        'The single-pass IHW estimate matches a 5-model Deep Ensemble on ECE (0.316 vs. 0.337) '
        'and is ≈ 2x better on NLL (5.02 vs. 9.17), at 1x inference cost vs. 5x (Sec. 3.3).',
        'MC-Dropout achieves the lowest ECE/NLL but at 30x inference cost.',
    ),
)

# ----------------------------------------------------------------------------
# Appendix D.4: computational geometry and scaling (Tables 22-26)

_TABLE22 = _table(
    'table22',
    'Convex hull volume prediction (R2, mean ± std over 5 seeds; n in [15,35] points in R^d).',
    'r2', True, 5,
    ('Model', _PARAMS, 'd=3', 'd=6', 'd=9'),
    (
        ('Standard', '208K', '0.273 ± 0.081', '-0.209 ± 0.016', '-0.099 ± 0.002'),
        ('ST-Large', '362K', '0.504 ± 0.058', '-0.178 ± 0.012', '-0.088 ± 0.004'),
        ('HyperNet', '360K', '0.136 ± 0.082', '-0.211 ± 0.013', '-0.097 ± 0.003'),
        ('Perceiver', '341K', '0.164 ± 0.058', '-0.221 ± 0.007', '-0.096 ± 0.003'),
        ('LA-ST (Linear Attn.)', '359K', '0.473 ± 0.036', '-0.126 ± 0.022', '-0.077 ± 0.005'),
        ('MZAttn-Full', '368K', '0.804 ± 0.014', '0.103 ± 0.020', '0.003 ± 0.006'),
        ('MZAttn-Large', '457K', '0.826 ± 0.016', '0.191 ± 0.053', '0.056 ± 0.003'),
    ),
    claims=(
        'At d=3 MZAttn-Large beats the best baseline by +0.32 R2; from d=6 onwards every '
        'parameter-matched baseline collapses to negative R2 on raw targets.',
        'MZAttn-Large is the only architecture significantly above R2 = 0 at all three '
        'dimensions; the d=9 MZ-Full result (0.003 ± 0.006) is indistinguishable from zero.',
    ),
)

_TABLE23 = _table(
    'table23',
    'MST weight scaling (R2, mean ± std over 5 seeds).',
    'r2', True, 5,
    ('Model', 'd=16', 'd=32', 'd=64', 'd=128', 'd=256'),
    (
        ('Standard', '0.295 ± 0.072', '-0.202 ± 0.367', '-1.326 ± 0.245', '-2.789 ± 0.511',
         '-3.221 ± 0.305'),
        ('ST-Large', '0.526 ± 0.044', '0.274 ± 0.140', '-0.252 ± 0.046', '-1.230 ± 0.430',
         '-2.425 ± 0.247'),
        ('HyperNet', '0.250 ± 0.068', '-0.211 ± 0.244', '-1.352 ± 0.116', '-1.985 ± 0.251',
         '-3.423 ± 0.222'),
        ('Perceiver', '0.400 ± 0.097', '-0.082 ± 0.180', '-1.049 ± 0.242', '-2.361 ± 0.248',
         '-3.320 ± 0.299'),
        ('MZAttn-Full', '0.724 ± 0.010', '0.625 ± 0.027', '0.581 ± 0.008', '0.484 ± 0.019',
         '0.384 ± 0.042'),
        ('MZAttn-Large', '0.612 ± 0.009', '0.531 ± 0.018', '0.538 ± 0.038', '0.497 ± 0.021',
         '0.435 ± 0.012'),
    ),
    claims=(
        'Past d=32 every non-MZ baseline collapses to strongly negative R2; MZAttn is the only '
        'architecture above R2 = 0 for all d <= 256, with MSE 4-8x lower than the best baseline '
        'at d >= 64.',
        'MZ-Large overtakes MZ-Full at d >= 128 (0.435 vs. 0.384 at d=256).',
    ),
)

_SGSP_MODELS = ('Standard', 'ST-Large', 'HyperNet', 'Perceiver', 'LA-ST', 'MZAttn-Full',
                'MZAttn-Large')

_TABLE24 = _table(
    'table24',
    'Sparse Geometric Set Predicates benchmark (R2, mean over 5 seeds; 7 models x 5 seeds x '
    '3 dims x 4 tasks = 420 runs).',
    'r2', True, 5,
    ('Task', *_SGSP_MODELS),
    (
        ('diameter d=8', '0.723', '0.768', '0.702', '0.674', '0.787', '0.876', '0.814'),
        ('diameter d=16', '0.732', '0.748', '0.706', '0.682', '0.755', '0.806', '0.727'),
        ('diameter d=32', '0.774', '0.775', '0.687', '0.683', '0.740', '0.710', '0.663'),
        ('knn-radius d=8', '0.721', '0.786', '0.697', '0.611', '0.815', '0.869', '0.810'),
        ('knn-radius d=16', '0.703', '0.699', '0.655', '0.593', '0.710', '0.784', '0.721'),
        ('knn-radius d=32', '0.740', '0.728', '0.651', '0.629', '0.697', '0.685', '0.653'),
        ('k-smallest sum d=8', '0.116', '0.109', '0.034', '0.083', '0.108', '0.152', '0.097'),
        ('k-smallest sum d=16', '0.009', '0.009', '-0.005', '0.005', '0.007', '0.010',
         '-0.039'),
        ('k-smallest sum d=32', '-0.010', '-0.024', '-0.003', '-0.011', '-0.017', '0.014',
         '0.001'),
        ('furthest-first d=8', '0.422', '0.478', '0.275', '0.298', '0.456', '0.604', '0.531'),
        ('furthest-first d=16', '0.396', '0.391', '0.163', '0.249', '0.365', '0.438', '0.205'),
        ('furthest-first d=32', '0.315', '0.276', '0.100', '0.209', '0.252', '0.225', '0.206'),
    ),
    claims=(
        'MZAttn-Full wins every d=8 task with margin +0.04 to +0.13, keeps an advantage at '
        'd=16 on 3 of 4 tasks, and is overtaken by parameter-matched Set Transformer variants '
        'at d=32.',
    ),
)

_TABLE25 = _table(
    'table25',
    'Large-scale generalization (R2, mean over 3 seeds) on the max, sum and range tasks.',
    'r2', True, 3,
    ('Model', 'Max d=16, n=10-50', 'Max d=64, n=200-500', 'Max d=128, n=500-1000',
     'Sum d=64, n=200-500', 'Range d=64, n=200-500', 'Range d=128, n=500-1000'),
    (
        ('Standard', '0.748', '0.744', '0.632', '0.939', '0.083', '0.038'),
        ('ST-Large', '0.822', '0.744', '0.631', '0.946', '0.083', '0.038'),
        ('Perceiver', '0.728', '0.745', '0.628', '0.910', '0.077', '0.036'),
        ('MZAttn', '0.843', '0.745', '0.627', '0.998', '0.082', '0.039'),
    ),
    claims=(
        "MZAttn's advantage on the sum task grows with scale: at d=64, n=200-500 MZ reaches "
        'R2 = 0.998 while ST-Large reaches only 0.946, a 30x MSE reduction.',
        'On max the architectural differences vanish at scale, and on range all models '
        'struggle (R2 < 0.1 at n >= 200).',
    ),
)

_TABLE26 = _table(
    'table26',
    'Patience sweep on ResNet-50 k-center furthest (R2 mean ± std over 5 seeds, 80 epochs).',
    'r2', True, 5,
    ('Model', 'patience=20', 'patience=100', 'patience=300'),
    (
        ('MZAttn-Full', '0.795 ± 0.001 (1st)', '0.794 ± 0.002 (1st)', '0.796 ± 0.001 (1st)'),
        ('ST-Large', '0.790 ± 0.001 (3rd)', '0.791 ± 0.001 (2nd)', '0.791 ± 0.002 (2nd)'),
        ('HyperNet', '0.790 ± 0.003 (2nd)', '0.790 ± 0.003 (3rd)', '0.789 ± 0.003 (3rd)'),
        ('LinearAttn', '0.788 ± 0.002 (4th)', '0.788 ± 0.003 (4th)', '0.789 ± 0.003 (4th)'),
    ),
    claims=(
        'Every model converges to within 0.002 R2 of its patience-300 plateau and the ranking '
        'MZAttn-Full > ST-Large ~ HyperNet > LinearAttn is stable, with a lead of 0.003-0.005 '
        'R2.',
    ),
)

# ----------------------------------------------------------------------------
# Appendix D.5: real-world experiments (Tables 27-33)

_TABLE27 = _table(
    'table27',
    'Few-shot meta-regression at L=32, parameter-fair 7-way comparison (MSE, mean over '
    '3 seeds); rows are encoder depths, parameter counts are those of the n=4 configuration.',
    'mse', False, 3,
    ('Depth', 'Standard', 'ST-Large', 'HyperNet', 'Perceiver', 'LinearAttn', 'MZAttn-Full',
     'MZAttn-Large'),
    (
        ('n=2', '0.79', '0.83', '30.75', '30.76', '30.77', '1.01', '1.39'),
        ('n=4', '0.45', '0.17', '0.58', '30.76', '1.24', '0.47', '0.36'),
    ),
    claims=(
        'At matched depth (n=4) ST-Large is the clear winner (MSE 0.17) and MZAttn-Large '
        'places second (0.36); at n=2 Standard narrowly wins against MZAttn.',
        'Perceiver fails to converge at either depth; the n=2 row uses about 50-55% of the '
        'n=4 parameter counts.',
    ),
    params={'Standard': 146_000, 'ST-Large': 255_000, 'HyperNet': 297_000,
            'Perceiver': 314_000, 'LinearAttn': 380_000, 'MZAttn-Full': 334_000,
            'MZAttn-Large': 485_000},
)

_QM9 = ('mu', 'alpha', 'HOMO', 'LUMO', 'Gap', 'R2', 'ZPVE', 'U0', 'U298', 'H298', 'G298',
        'Cv')

_TABLE28 = _table(
    'table28',
    'QM9 molecular property prediction across all 12 targets (R2, mean over 3 seeds); the '
    'R2 column is the electronic spatial extent target.',
    'r2', True, 3,
    ('Model', _PARAMS, *_QM9),
    (
        ('Deep Sets', '35K', '0.437', '0.865', '–', '–', '0.653', '–', '–', '–', '–', '–',
         '–', '–'),
        ('Slot Attention', '59K', '0.607', '0.917', '–', '–', '0.753', '–', '–', '–', '–',
         '–', '–', '–'),
        ('Set Transf.', '208K', '0.752', '0.905', '0.803', '0.838', '0.858', '0.959', '0.954',
         '0.856', '0.856', '0.856', '0.859', '0.940'),
        ('ST-Large', '361K', '0.795', '0.914', '0.842', '0.852', '0.879', '0.967', '0.958',
         '0.864', '0.862', '0.863', '0.858', '0.950'),
        ('ST-XLarge', '443K', '–', '–', '0.883', '0.937', '–', '–', '–', '–', '–', '–', '–',
         '–'),
        ('Perceiver', '341K', '0.766', '0.920', '0.774', '0.819', '0.824', '0.967', '0.955',
         '0.891', '0.886', '0.883', '0.888', '0.948'),
        ('HyperNet', '360K', '0.641', '0.902', '0.722', '0.773', '0.786', '0.955', '0.934',
         '0.871', '0.863', '0.869', '0.876', '0.922'),
        ('MZAttn', '368K', '0.761', '0.911', '0.802', '0.830', '0.855', '0.947', '0.952',
         '0.877', '0.875', '0.871', '0.867', '0.940'),
        ('MZAttn-Large', '417K', '0.500', '0.698', '0.875', '0.926', '0.874', '0.823', '0.702',
         '0.759', '0.760', '0.722', '0.757', '0.676'),
    ),
    claims=(
        'MZAttn matches the best parameter-matched attention baseline within 0.05 R2 on every '
        'target without leading on any individual one (the predicted low-TDOF behaviour).',
        'MZAttn-Large tops ST-Large on HOMO (+0.033) and LUMO (+0.074), but the '
        'parameter-matched ST-XLarge (443K) closes the gap with 0.883 ± 0.005 on HOMO and '
        '0.937 ± <0.001 on LUMO.',
    ),
)

_TABLE29 = _table(
    'table29',
    'Slot Attention baseline comparison on synthetic set tasks (R2, mean ± std over 3 seeds); '
    'models at canonical sizes, not parameter-matched.',
    'r2', True, 3,
    ('Model', 'Max', 'Sum', 'Median', 'Range'),
    (
        ('Slot Attention', '0.749 ± 0.004', '0.892 ± 0.004', '0.652 ± 0.002', '0.324 ± 0.002'),
        ('Deep Sets', '0.823 ± 0.002', '0.995 ± <0.001', '0.646 ± 0.003', '0.348 ± 0.003'),
        ('Set Transformer', '0.817 ± 0.001', '0.960 ± 0.002', '0.659 ± 0.008',
         '0.344 ± <0.001'),
        ('MZAttn (ours)', '0.847 ± 0.008', '0.999 ± <0.001', '0.654 ± 0.001', '0.343 ± 0.001'),
    ),
    claims=(
        'Slot Attention trails the standard and matrix-zonotope attention variants on all four '
        'tasks.',
        'MZAttn is best on max (R2 = 0.847 vs. 0.817) and reaches R2 = 0.999 on sum vs. 0.960 '
        'for Set Transformer, a 40x residual-MSE reduction.',
    ),
    params={'Slot Attention': 59_000, 'Deep Sets': 36_000, 'Set Transformer': 208_000,
            'MZAttn (ours)': 365_000},
)

_TABLE30 = _table(
    'table30',
    'Computational overhead (ratio MZ/Standard), RTX 5090, batch 64.',
    'ratio', False, None,
    ('Config', 'Params', 'Inference', 'Training', 'Memory'),
    (
        ('Small (d=64, n=30)', '1.9×', '2.4×', '2.2×', '2.5×'),
        ('Medium (d=128, n=50)', '1.9×', '2.5×', '3.8×', '2.0×'),
        ('Large (d=256, n=100)', '1.7×', '2.7×', '5.5×', '2.5×'),
    ),
    claims=(
        'At the small configuration MZAttn costs 1.9x the parameters, 2.4x the inference time, '
        '2.2x the training time and 2.5x the memory of the standard Set Transformer.',
        'MZAttn costs 1.7-1.9x parameters and 2.4-2.7x inference vs. Standard ST (Sec. 6).',
    ),
)

#: App. D.5.6 prints its negative-transfer numbers in the text, not in a table:
#: one row per quoted (setting, model) number.
_NEGATIVE_TRANSFER = _table(
    'negative_transfer',
    'App. D.5.6 (text): negative transfer, test NLL of Neural-Process image completion '
    '(MNIST K=50, T=200, 5 seeds; CIFAR-100 K=100, T=300, 3-5 seeds) and of few-shot tabular '
    'meta-regression on held-out datasets (10 seeds, patience 12).',
    'nll', False, None,
    ('Setting and model', 'NLL'),
    (
        ('MNIST ST-Large', '-1.657'),
        ('MNIST MZAttn-Large', '-1.599'),
        ('MNIST Standard', '-1.617'),
        ('CIFAR-100 Standard', '-1.147'),
        ('CIFAR-100 MZAttn-Full', '-1.140'),
        ('held-out MZAttn-Full', '+20.02'),
        ('held-out Standard', '+18.66'),
    ),
    claims=(
        'On MNIST ST-Large reaches the best test NLL of -1.657; MZAttn-Large reaches -1.599 at '
        '3.4x the parameters of Standard (-1.617).',
        'On CIFAR-100 Standard attains -1.147 NLL at 144K parameters and MZAttn-Full -1.140 at '
        '332K: MZ loses by 0.007 NLL with 2.3x the parameters.',
        'Tabular meta-regression on held-out datasets: test NLL jumps from -0.43 at validation '
        'to +18-20; MZAttn-Full (+20.02) and Standard (+18.66) are within seed variance (gap '
        '1.36, pooled std 5.76), and MZAttn-Full has a slightly lower test MSE (1.515 vs. '
        '1.597).',
        'On the same-distribution split MZAttn-Full wins 5.5% on MSE but loses 1.4% on NLL, a '
        'mixed signal: neither split supports a dominance claim.',
    ),
    params={'CIFAR-100 Standard': 144_000, 'CIFAR-100 MZAttn-Full': 332_000},
)

_TABLE31 = _table(
    'table31',
    'Systematic transfer study: MZAttn-Full rank out of 7 parameter-matched methods per '
    '(construction, target) cell; Tier 1: low-rank 2D pixel coordinates (first 7 rows), '
    'Tier 2: medium-rank 8D feature-lift (next 4), Tier 3: high-rank deep feature (last).',
    ('dimension', 'rank', 'rank', 'rank', 'rank'), False, 3,
    ('Construction', 'd', 'MEB', 'Hull', 'MST', 'Furthest'),
    (
        ('MNIST raw pixel', '2', '4', '5', '–', '–'),
        ('MNIST + affine (TDOF-4)', '2', '5', '–', '–', '–'),
        ('MNIST 3-digit mixture', '2', '4', '4', '4', '–'),
        ('Fashion-MNIST pixel', '2', '–', '4', '–', '2'),
        ('Fashion-MNIST + affine', '2', '–', '3', '–', '–'),
        ('Fashion-MNIST 3-digit mix', '2', '–', '–', '4', '–'),
        ('CIFAR-100 raw pixel', '2', '–', '3', '–', '5'),
        ('MNIST 8D polynomial lift', '8', '3', '3', '–', '–'),
        ('CIFAR-100 4×4 patch features', '8', '5', '2', '–', '–'),
        ('CIFAR-100 variable-size patches', '8', '5', '–', '4', '–'),
        ('CIFAR-100 class-mixture patches', '8', '5', '–', '–', '–'),
        ('CIFAR-100 ResNet-18 layer-3', '256', '–', '–', '5', '1'),
    ),
    claims=(
        'Mean ranks across populated cells are 3.9 on Tier 1 (n=11 cells), 3.9 on Tier 2 '
        '(n=5) and 3.0 on Tier 3 (n=2), against 4 expected under the no-advantage null.',
        'The only rank-1 cell is k-center Furthest on CIFAR-100 ResNet-18 layer-3 features; the '
        'Tier-3 MEB cell is printed as (unstable) without a rank.',
    ),
)

_TABLE32 = _table(
    'table32',
    'Real-world SGSP on CIFAR-100 ResNet-18 layer-3 features (n=16, d=256, R2); k-center '
    'furthest uses 5 seeds, the other rows 3; the MEB cell is structurally degenerate.',
    'r2', True, None,
    ('Task', 'Standard', 'ST-Large', 'HyperNet', 'Perceiver', 'LinearAttn', 'MZAttn-Full'),
    (
        ('Furthest (k=5)', '0.789', '0.793', '0.792', '0.746', '0.797', '0.801'),
        ('Diameter', '0.856', '0.872', '0.840', '0.815', '0.882', '0.876'),
        ('k-NN radius', '0.892', '0.899', '0.898', '0.848', '0.904', '0.898'),
        ('MST weight', '0.912', '0.919', '0.916', '0.908', '0.922', '0.914'),
        ('MEB radius', '0.800', '0.815', '0.783', '0.728', '0.817', '0.542 (unstable)'),
    ),
    claims=(
        'MZAttn-Full ranks 1st on k-center furthest cost (0.801 vs. LinearAttn 0.797; '
        '10-seed verification 0.797 vs. 0.796); on the other valid tasks methods tie within '
        '<= 0.03 R2 and LinearAttn ranks first.',
    ),
)

_TABLE33 = _table(
    'table33',
    'Dimension scaling on the k-center furthest target (k=5, n=16, R2, mean over 5 seeds); '
    'ResNet-50 numbers use early-stopping patience 300.',
    'r2', True, 5,
    ('Feature', 'Standard', 'ST-Large', 'HyperNet', 'Perceiver', 'LinearAttn', 'MZAttn-Large',
     'MZAttn-Full'),
    (
        ('ResNet-18 (d=256)', '0.789', '0.793', '0.792', '0.746', '0.797', '0.789', '0.801'),
        ('ResNet-50 (d=1024)', '0.789', '0.791', '0.789', '0.784', '0.789', '0.793', '0.796'),
    ),
    claims=(
        'MZAttn-Full ranks first on both backbones; at d=1024 the gap is +0.0046 R2 '
        "(Welch's t ≈ 5.2, p ≈ 0.0018, 5 seeds).",
        'Per-method stds at d=1024: MZAttn-Full 0.7955 ± 0.0009, MZAttn-Large '
        '0.7930 ± 0.0024, ST-Large 0.7909 ± 0.0017.',
    ),
)

# ----------------------------------------------------------------------------
# Lookup

TABLES: dict[str, PaperTable] = {
    table.key: table
    for table in (
        _TABLE1, _TABLE2, _TABLE3, _TABLE4, _TABLE5, _TABLE6, _TABLE7, _TABLE8, _TABLE9,
        _TABLE10, _TABLE11, _TABLE12, _TABLE13, _TABLE14, _TABLE15, _TABLE16, _TABLE17,
        _TABLE18, _TABLE19, _TABLE20, _TABLE21, _TABLE22, _TABLE23, _TABLE24, _TABLE25,
        _TABLE26, _TABLE27, _TABLE28, _TABLE29, _TABLE30, _TABLE31, _TABLE32, _TABLE33,
        _FIGURE1, _NEGATIVE_TRANSFER,
    )
}


def paper_table(key: str) -> PaperTable:
    r"""Returns the table :obj:`key` (``'table1'`` ... ``'table33'``,
    ``'figure1'``, ``'negative_transfer'``).

    Raises:
        ValueError: If :obj:`key` names no table.
    """
    if key not in TABLES:
        raise ValueError(f"key must be one of {sorted(TABLES)} (got '{key}')")
    return TABLES[key]


def paper_value(key: str, row: str, column: str) -> PaperValue:
    r"""Returns the printed cell (:obj:`row`, :obj:`column`) of table
    :obj:`key`.

    Raises:
        ValueError: If the table, the row or the column does not exist, or the
            paper leaves the cell blank.
    """
    table = paper_table(key)
    if row not in table.rows:
        raise ValueError(f"row must be one of {list(table.rows)} for {key} (got '{row}')")
    if column not in table.columns:
        raise ValueError(f"column must be one of {list(table.columns)} for {key} "
                         f"(got '{column}')")
    if column not in table.rows[row]:
        raise ValueError(f"{key} leaves the cell (row '{row}', column '{column}') blank; "
                         f"its row has {list(table.rows[row])}")
    return table.rows[row][column]


def column_metric(key: str, column: str) -> tuple[str, bool | None]:
    r"""Returns the metric of :obj:`column` in table :obj:`key` and whether
    higher is better (:obj:`None` for descriptive columns such as counts).

    Raises:
        ValueError: If the table or the column does not exist.
    """
    table = paper_table(key)
    if column not in table.columns:
        raise ValueError(f"column must be one of {list(table.columns)} for {key} "
                         f"(got '{column}')")
    metric = _COLUMN_METRICS[key][column] if table.metric == 'mixed' else table.metric
    return metric, _DIRECTIONS[metric]
