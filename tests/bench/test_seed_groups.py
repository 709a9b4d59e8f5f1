import json

from mzattn.bench import seed_groups


def test_seed_groups_bench_times_both_modes_on_the_same_records(tmp_path):
    out = tmp_path / 'seed_groups.json'
    assert seed_groups.main(['--profile', 'smoke', '--epochs', '1', '--repeats', '1',
                             '--seeds', '0,1', '--out', str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result['seconds']) == {'sequential', 'together'}
    assert result['together_speed'] == result['seconds']['sequential']['median'] \
        / result['seconds']['together']['median']
    assert result['epochs_run'] == [1, 1]
