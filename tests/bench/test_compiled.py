"""bench/compiled.py's harness mode on CPU (its CUDA graphs need a GPU)."""
import json

import pytest
from mzattn.bench.compiled import main


def test_harness_mode_times_both_paths_of_the_harness(tmp_path):
    out = tmp_path / 'compiled.json'
    assert main(['--harness', '--models', 'standard', '--sets', '4', '--repeats', '1',
                 '--backend', 'aot_eager', '--out', str(out)]) == 0
    result = json.loads(out.read_text())
    assert result['suite'] == 'compiled-harness' and result['device'] == 'cpu'
    row = result['rows']['standard']
    assert row['compile_s'] > 0 and row['eager_s'] > 0 and row['compiled_s'] > 0
    assert row['speedup'] == pytest.approx(row['eager_s'] / row['compiled_s'])


def test_the_ragged_comparison_is_refused_off_cpu(capsys):
    with pytest.raises(SystemExit):
        main(['--device', 'cuda'])
    assert 'pass --harness' in capsys.readouterr().err
