import json

from mzattn.bench import stacked_seeds


def test_stacked_seeds_bench_writes_every_mode_and_ratio(tmp_path):
    out = tmp_path / 'stacked_seeds.json'
    assert stacked_seeds.main(['--models', 'deep-sets', '--seeds', '2', '--steps', '1',
                               '--repeats', '1', '--threads', '2', '--out', str(out)]) == 0
    result = json.loads(out.read_text())
    entry = result['results']['deep-sets']
    assert set(entry['rows']) == {'stacked', 'sequential', 'pool'}
    assert entry['pool_threads'] == 1  # the threads split between the two workers
    rows = entry['rows']
    assert entry['stacked_vs_sequential'] == rows['sequential']['median_s'] / \
        rows['stacked']['median_s']
    assert entry['stacked_vs_pool'] == rows['pool']['median_s'] / rows['stacked']['median_s']
    assert all(row['seed_steps_per_s'] > 0 for row in rows.values())


def test_seed_batches_are_the_seeds_own():
    first, again, other = (stacked_seeds.seed_batches(seed, 1, 'cpu')[0] for seed in (0, 0, 1))
    assert first['layout'].counts == again['layout'].counts != other['layout'].counts
    assert all(lo <= n <= hi for n in first['layout'].counts
               for lo, hi in [stacked_seeds.SIZES])
