"""The per-step profile of bench/step_profile.py on CPU (CUDA counts need a GPU)."""
import json

import torch
from mzattn.bench.step_profile import fine_chunks_row, main, make_batch, profile_model

import mzlayers.generator_path as generator_path


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


def test_fine_chunks_row_runs_the_generator_path_in_more_chunks(monkeypatch):
    # CPU playing an accelerator: its default budget made coarse, as CUDA's
    monkeypatch.setitem(generator_path.CHUNK_ELEMENTS, 'cpu',
                        generator_path.CHUNK_ELEMENTS['cuda'])
    device, data = torch.device('cpu'), make_batch(torch.device('cpu'), num_sets=16)
    coarse = profile_model('mz-full', device, data, steps=1)
    fine = fine_chunks_row(device, data, steps=1, budget=2**12)
    assert fine['model'] == 'mz-full+cpu-chunks' and fine['params'] == coarse['params']
    assert fine['aten_ops'] > 2 * coarse['aten_ops']
    assert generator_path.CHUNK_ELEMENTS['cpu'] == generator_path.CHUNK_ELEMENTS['cuda']


def test_stored_row_builds_mz_attention_without_recomputation():
    device, data = torch.device('cpu'), make_batch(torch.device('cpu'), num_sets=16)
    recomputed = profile_model('mz-full', device, data, steps=1)
    stored = profile_model('mz-full', device, data, steps=1, stored=True)
    assert stored['model'] == 'mz-full+stored' and stored['params'] == recomputed['params']
    assert stored['aten_ops'] < recomputed['aten_ops']


def test_the_issue_rows_come_first(monkeypatch):
    # a GPU check's stage cut short by its time limit keeps them (the H200's did not)
    import mzattn.bench.step_profile as step_profile
    monkeypatch.setattr(step_profile, 'profile_model',
                        lambda name, *args, **variant: {'model': name + ''.join(
                            f'+{k}' for k in variant)})
    monkeypatch.setattr(step_profile, 'make_batch', lambda device: {})
    rows = step_profile.profile_models(['deep-sets', 'mz-full', 'egnn', 'standard'],
                                       torch.device('cpu'), steps=1)
    assert [row['model'] for row in rows] == [
        'standard', 'standard+bf16', 'standard+plain', 'mz-full', 'mz-full+bf16',
        'mz-full+plain', 'mz-full+stored', 'deep-sets', 'egnn']
