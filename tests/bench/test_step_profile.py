"""The per-step profile of bench/step_profile.py on CPU (CUDA counts need a GPU)."""
import json

import torch
from mzattn.bench.step_profile import main, make_batch, profile_model


def test_a_row_counts_ops_and_no_syncs_given_the_layout():
    data = make_batch(torch.device('cpu'), num_sets=4)
    assert sum(data['sizes']) == data['x'].size(0) == data['batch'].numel()
    row = profile_model('deep-sets', torch.device('cpu'), data, steps=1)
    assert row['model'] == 'deep-sets' and row['ms'] > 0 and row['params'] == 36433
    assert row['aten_ops'] > 0 and row['counted_syncs'] == 0
    plain = profile_model('deep-sets', torch.device('cpu'), data, steps=1, plain=True)
    assert plain['model'] == 'deep-sets+plain' and plain['counted_syncs'] == 1  # the one read
    assert 'launches' not in row  # CUDA only


def test_cli_writes_json_and_reports_a_failing_model(tmp_path, monkeypatch):
    import mzattn.bench.step_profile as step_profile

    def fail(*args, **kwargs):
        raise RuntimeError('boom')
    monkeypatch.setattr(step_profile, 'profile_model', fail)
    out = tmp_path / 'profile.json'
    main(['--device', 'cpu', '--models', 'deep-sets', '--steps', '1', '--out', str(out)])
    result = json.loads(out.read_text())
    assert result['suite'] == 'step_profile' and result['device'] == 'cpu'
    assert result['rows'] == [{'model': 'deep-sets', 'error': 'RuntimeError: boom'}]
