import importlib.util
import re
import subprocess
from pathlib import Path

import pytest
from mzattn.repro.core.registry import TABLE_MODULES, load_spec
from mzattn.repro.report.paper_values import (
    TABLES,
    PaperValue,
    _load,
    column_metric,
    paper_table,
    paper_value,
)

#: The paper's text lives outside the repository (CI checks out only the repo).
PAPER = Path(__file__).parents[3].parent / 'shared/paper/mzattn-paper.txt'
_SIGNED = re.compile(r'-?\d*\.?\d+')
_UNSIGNED = re.compile(r'\d*\.?\d+')


@pytest.fixture(scope='module')
def paper() -> str:
    if not PAPER.is_file():
        pytest.skip(f'paper text not found at {PAPER} (only the shared workspace has it)')
    return _normalise(PAPER.read_text(encoding='utf-8'))


def _normalise(latex: str) -> str:
    r"""Rewrites the extraction's LaTeX fragments as plain text."""
    text = re.sub(r'\$-\$\s*', '-', latex)
    for macro, plain in ((r'\pm', '±'), (r'\times', '×'), (r'\%', '%'), ('{=}', '=')):
        text = text.replace(macro, plain)
    return re.sub(r'[${}]', '', text)


def _window(paper: str, key: str) -> str:
    r"""The paper text from the caption of :obj:`key` to the next caption."""
    if key == 'figure1':
        start, end = paper.index('Figure 1:'), paper.index('Table 1:')
    elif key == 'negative_transfer':
        start = paper.index('D.5.6 Negative Transfer')
        end = paper.index('Systematic real-world transfer study')
    else:
        number = int(key.removeprefix('table'))
        start = paper.index(f'Table {number}:')
        end = paper.find(f'Table {number + 1}:', start)
    return paper[start:end if end > 0 else len(paper)]


def _tokens(text: str) -> list[str]:
    return _SIGNED.findall(text)


def _in_order(cells: list[list[str]], tokens: list[str], gap: int = 2) -> bool:
    r"""Whether the token runs :obj:`cells` occur in :obj:`tokens` in order,
    each run contiguous and at most :obj:`gap` tokens (e.g. a parameter count)
    after the previous one."""
    def at(i: int, k: int) -> bool:
        run = cells[k]
        if tokens[i:i + len(run)] != run:
            return False
        end = i + len(run)
        return k + 1 == len(cells) or any(
            at(j, k + 1) for j in range(end, min(end + gap + 1, len(tokens))))
    return any(at(i, 0) for i in range(len(tokens)))


def _squash(text: str) -> str:
    return re.sub(r'\s+', '', text).lower()


def _printed_count(count: int) -> str:
    return f'{count / 1e6:g}M' if count >= 1_000_000 else f'{count / 1e3:g}K'


@pytest.mark.parametrize('key', sorted(TABLES))
def test_rows_occur_in_order_near_caption(paper, key):
    tokens = _tokens(_window(paper, key))
    table = TABLES[key]
    assert table.rows
    for label, cells in table.rows.items():
        runs = [_tokens(cells[c].text) for c in table.columns if c in cells]
        assert _in_order(runs, tokens), f"{key}: row '{label}' is not printed as {runs}"


@pytest.mark.parametrize('key', sorted(TABLES))
def test_params_and_row_labels_occur_near_caption(paper, key):
    window = _squash(_window(paper, key))
    table = TABLES[key]
    counts = [_printed_count(n) for n in table.params.values()]
    assert [c for c in counts if c.lower() not in window] == []
    words = {w.strip('(),').lower() for label in table.rows for w in label.split()}
    assert sorted(w for w in words if w not in window) == []


def test_claim_numbers_occur_in_paper(paper):
    printed = set(_UNSIGNED.findall(paper))
    for table in TABLES.values():
        assert table.claims, table.key
        for claim in table.claims:
            assert set(_UNSIGNED.findall(claim)) <= printed, (table.key, claim)


@pytest.mark.parametrize('key', sorted(TABLES))
def test_table_structure(key):
    table = paper_table(key)
    assert table.key == key and table.caption and table.rows
    assert len(set(table.columns)) == len(table.columns)
    assert table.seeds is None or table.seeds >= 1
    models = set(table.rows) | set(table.columns)
    assert all(n > 0 for n in table.params.values()) and set(table.params) <= models
    for row, cells in table.rows.items():
        assert cells, f'{key}: row {row} is empty'
        assert set(cells) <= set(table.columns)
        for column, value in cells.items():
            assert isinstance(value, PaperValue) and value.text
            assert value.std is None or value.std >= 0
            _check_range(key, column, value)


def _check_range(key: str, column: str, value: PaperValue):
    metric, _ = column_metric(key, column)
    if metric == 'r2':
        assert value.mean <= 1, (key, column, value)
    elif metric == 'accuracy':
        assert 0 <= value.mean <= 100, (key, column, value)
    elif metric == 'rank':
        assert value.mean in range(1, 8), (key, column, value)
    elif metric not in ('mse_change_pct', 'nll'):  # a density's NLL may be negative
        assert value.mean >= 0, (key, column, value)


def test_every_table_of_the_paper_is_present():
    assert set(TABLES) == {f'table{i}' for i in range(1, 34)} | {'figure1', 'negative_transfer'}


@pytest.mark.parametrize('key,row,column,expected', [
    ('table1', '4', 'MZAttn-1L R2', PaperValue(0.995, 0.002, '0.995 ± 0.002')),
    ('table1', '32', 'MSE ratio', PaperValue(6.5, None, '6.5×')),
    ('table2', 'MZAttn (ours)', 'G MSE', PaperValue(99.4, 1.9, '99.4 ± 1.9')),
    ('table2', 'ST-Large', 'C MN40', PaperValue(79.9, 1.0, '79.9 ± 1.0%')),
    ('table2', 'Set Transformer', 'D MSE (x10^-2)', PaperValue(2.60, 0.24, '2.60 ± 0.24')),
    ('table3', 'ST-Large', 'd=32', PaperValue(-0.006, 0.011, '-0.006 ± 0.011')),
    ('table5', 'Hull d=9', 'HyperNet r=32', PaperValue(-0.098, None, '-0.098 ± <.001')),
    ('table13', '4', 'MZ params', PaperValue(83_000.0, None, '83K')),
    ('table14', '×[1/1.5,1.5] log-symmetric', 'frac. trials with rho>=0.6',
     PaperValue(95.0, None, '≥95%')),
    ('table26', 'HyperNet', 'patience=20', PaperValue(0.790, 0.003, '0.790 ± 0.003 (2nd)')),
    ('table30', 'Large (d=256, n=100)', 'Training', PaperValue(5.5, None, '5.5×')),
    ('table32', 'MEB radius', 'MZAttn-Full', PaperValue(0.542, None, '0.542 (unstable)')),
    ('figure1', 'MZAttn', 'd=8', PaperValue(0.69, None, '0.69')),
])
def test_paper_value(key, row, column, expected):
    assert paper_value(key, row, column) == expected


def test_params():
    assert paper_table('table2').params['ST-Large'] == 362_000
    assert paper_table('table3').params['HyperNet (r=64, full key-rank)'] == 1_300_000
    assert paper_table('table8').params['32'] == 383_000
    assert paper_table('table27').params['MZAttn-Large'] == 485_000
    assert 'Deep Sets' not in paper_table('table7').params


def test_headline_claims():
    assert any('0.97 to 0.40' in c and 'R2 >= 0.90' in c for c in paper_table('table1').claims)
    assert any('0.316 vs. 0.337' in c and '5.02 vs. 9.17' in c
               for c in paper_table('table21').claims)
    small = paper_table('table30').rows['Small (d=64, n=30)']
    assert [small[c].mean for c in ('Params', 'Inference', 'Training', 'Memory')] == [
        1.9, 2.4, 2.2, 2.5]


def test_column_metric():
    assert column_metric('table2', 'A MSE') == ('mse', False)
    assert column_metric('table2', 'E Scan') == ('accuracy', True)
    assert column_metric('table3', 'd=8') == ('r2', True)
    assert column_metric('table19', 'Count') == ('count', None)
    with pytest.raises(ValueError, match='column must be one of'):
        column_metric('table3', 'd=64')


def test_unknown_keys_raise():
    with pytest.raises(ValueError, match=r"key must be one of .*'table34'"):
        paper_table('table34')
    with pytest.raises(ValueError, match="row must be one of .*got 'MZAttn'"):
        paper_value('table2', 'MZAttn', 'A MSE')
    with pytest.raises(ValueError, match="column must be one of .*got 'A mse'"):
        paper_value('table2', 'MZAttn (ours)', 'A mse')
    with pytest.raises(ValueError, match='leaves the cell .* blank'):
        paper_value('table2', 'ST-Large', 'D R2')


#: The last commit whose ``repro/paper_values.py`` wrote the values as Python
#: (before issue 37 moved them to ``repro/paper/*.yaml``, now ``repro/report/paper/``).
PYTHON_VALUES_COMMIT = '00b29c9afceb7d88fe3dc8f28e45ea7ca9809688'


@pytest.fixture(scope='module')
def python_values(tmp_path_factory):
    r"""The module as it was at :obj:`PYTHON_VALUES_COMMIT`, from git history."""
    root = Path(__file__).resolve().parents[3]
    shown = subprocess.run(['git', '-C', str(root), 'show',
                            f'{PYTHON_VALUES_COMMIT}:repro/paper_values.py'],
                           capture_output=True, text=True)
    if shown.returncode != 0:
        pytest.skip(f'commit {PYTHON_VALUES_COMMIT[:10]} is not in this checkout '
                    f'({shown.stderr.strip()})')
    path = tmp_path_factory.mktemp('before') / 'paper_values_before.py'
    path.write_text(shown.stdout, encoding='utf-8')
    spec = importlib.util.spec_from_file_location('paper_values_before', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_data_files_give_what_the_python_module_gave(python_values):
    assert list(TABLES) == list(python_values.TABLES)
    for key, before in python_values.TABLES.items():
        table = TABLES[key]
        for name in ('key', 'caption', 'metric', 'higher_is_better', 'seeds', 'columns',
                     'params', 'claims'):
            assert getattr(table, name) == getattr(before, name), (key, name)
        assert list(table.rows) == list(before.rows), key
        for row, cells in before.rows.items():
            assert list(table.rows[row].items()) == [
                (column, PaperValue(v.mean, v.std, v.text)) for column, v in cells.items()
            ], (key, row)
        for column in before.columns:
            assert column_metric(key, column) == python_values.column_metric(key, column)


@pytest.mark.parametrize('key', [k for k in TABLE_MODULES if load_spec(k).paper is not None])
def test_every_cell_a_spec_compares_against_is_in_the_data(key):
    spec = load_spec(key)
    table = paper_table(spec.paper)
    labels = {spec.paper_label(row.label, column.label)
              for row in spec.rows for column in spec.columns} - {None}
    # a model or setting the paper does not print (e.g. MZAttn-Large in Table 32) misses on
    # one axis; a label missing on both is a typo
    assert sorted(label for label in labels
                  if label[0] not in table.rows and label[1] not in table.columns) == []
    printed = [label for label in labels if label[1] in table.rows.get(label[0], {})]
    assert printed or key == 'table31'  # Table 31 prints ranks, which we do not compare


def _write(folder: Path, key: str, text: str) -> Path:
    path = folder / f'{key}.yaml'
    path.write_text(text, encoding='utf-8')
    return path


_GOOD = """\
key: table99
caption: A table.
metric: r2
units: R² (dimensionless)
higher_is_better: true
seeds: 3
columns: [d=8]
params: {Standard: 208K}
claims: [A claim.]
cells:
  - [Standard, d=8, 0.025 ± 0.009]
"""


def test_load_reads_a_data_file(tmp_path):
    table = _load(_write(tmp_path, 'table99', _GOOD))
    assert table.rows == {'Standard': {'d=8': PaperValue(0.025, 0.009, '0.025 ± 0.009')}}
    assert table.params == {'Standard': 208_000} and table.units == {'d=8': 'R² (dimensionless)'}


@pytest.mark.parametrize('old,new,match', [
    ('[Standard, d=8, 0.025 ± 0.009]', '[Standard, d=8, 0.025]', r"cells\[0\] .* quoted strings"),
    ('[Standard, d=8, 0.025 ± 0.009]', '[Standard, d=16, "0.1"]', r"cells\[0\] .* unknown column"),
    ('units: R² (dimensionless)\n', '', 'table99.yaml: a table has the fields'),
    ('[Standard, d=8, 0.025 ± 0.009]', '[Standard, d=8, n/a]',
     r"cells\[0\] \['Standard', 'd=8', 'n/a'\]: cell 'n/a' holds no number"),
    ('key: table99', 'key: table98', "with 'key: table99'"),
    ('metric: r2', 'metric: accuracy_pct', r"metric names \['accuracy_pct'\]"),
])
def test_load_names_the_file_and_entry_of_bad_data(tmp_path, old, new, match):
    with pytest.raises(ValueError, match=match):
        _load(_write(tmp_path, 'table99', _GOOD.replace(old, new)))
