"""The GPU check's JSON and Markdown (bench/gpu_report.py), from a folder
made like the one bench/gpu_check.sh leaves, and the docs' copy."""
import glob
import json

import pytest
from mzattn.bench.gpu_report import BEGIN, END, collect, main, render

JUNIT = '''<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0"
failures="1" skipped="1" tests="4"><testcase classname="tests.cuda.test_cuda" name="test_a"/>
<testcase classname="tests.cuda.test_cuda" name="test_b[mz-full]"><failure message="x"/>
</testcase><testcase name="test_c"/><testcase name="test_d"><skipped/></testcase>
</testsuite></testsuites>'''
PROFILE = {'suite': 'step_profile', 'environment': {'device': 'cuda', 'gpu': 'NVIDIA H200',
                                                    'torch': '2.11.0'},
           'rows': [{'model': 'standard', 'ms': 12.345, 'aten_ops': 1257, 'kernel_ops': 640,
                     'counted_syncs': 0,
                     'params': 211905, 'launches': 400.0, 'syncs': 0.0, 'memcpy': 2.0},
                    {'model': 'mamba-pma', 'error': 'MissingExtraError: no mambapy'}]}


@pytest.fixture
def check_folder(tmp_path):
    (tmp_path / 'stages.tsv').write_text('tests_cuda\t95\t1\t130\nstep_profile\t100\t124\t100\n'
                                         'table30\t0\tskipped\t0\n')
    (tmp_path / 'tests_cuda.xml').write_text(JUNIT)
    (tmp_path / 'step_profile.json').write_text(json.dumps(PROFILE))
    logs = tmp_path / 'cell' / 'table3' / 'logs'
    logs.mkdir(parents=True)
    (logs / 'Standard__d_8__s1.csv').write_text(
        'epoch,train_loss,val_loss,val_metric,lr,epoch_time_s\n1,1,1,0,1e-4,2.5\n'
        '2,1,1,0,1e-4,1.5\n3,1,1,0,1e-4,1.7\n')
    return tmp_path


def test_collect_reads_every_stage(check_folder):
    result = collect(str(check_folder))
    assert [s['status'] for s in result['stages']] == ['failed (exit 1)', 'timed out', 'skipped']
    assert result['tests_cuda'] == {'tests': 4, 'failures': 1, 'errors': 0, 'skipped': 1,
                                    'failed': ['test_b[mz-full]']}
    assert result['cell'] == {'log': 'Standard__d_8__s1.csv', 'epochs': 3, 'median_epoch_s': 1.7}
    assert result['suites'] == {'set_pooling': None, 'table30': None}


def test_render_shows_stages_tests_steps_and_the_cell(check_folder):
    text = render(collect(str(check_folder)))
    assert 'Device: NVIDIA H200, torch 2.11.0.' in text
    assert '| step_profile | timed out | 100 (100) |' in text
    assert '`tests/cuda`: 2 passed, 1 failed, 1 skipped.' in text
    assert '- failed: `test_b[mz-full]`' in text
    assert '| standard | 12.35 | 400.0 | 0.0 | 2.0 | 1,257 | 640 | 0 |' in text
    assert '| mamba-pma | error: MissingExtraError: no mambapy |' in text
    assert '3 epochs in the stage\'s limit, median 1.70 s/epoch' in text


def test_the_seeds_stage_is_collected_and_rendered(check_folder):
    modes = {'stacked': {'median_s': 1.5}, 'sequential': {'median_s': 3.0},
             'pool': {'median_s': 2.25}}
    seeds = {'seeds': 3, 'steps': 10, 'results': {'standard': {
        'rows': modes, 'stacked_vs_sequential': 2.0, 'stacked_vs_pool': 1.5}}}
    assert collect(str(check_folder))['stacked_seeds'] is None  # an opt-in stage
    (check_folder / 'stacked_seeds.json').write_text(json.dumps(seeds))
    text = render(collect(str(check_folder)))
    assert 'Seeds together (3 seeds, 10 steps each' in text
    assert '| standard | 1.50 | 3.00 | 2.25 | 2.00× | 1.50× |' in text


def test_the_compile_stage_is_collected_and_rendered(check_folder):
    compiled = {'suite': 'compiled-harness', 'sets': 128, 'rows': {'mz-full': {
        'compile_s': 95.25, 'eager_s': 0.0712, 'compiled_s': 0.0089, 'speedup': 8.0}}}
    assert collect(str(check_folder))['compiled'] is None  # an opt-in stage
    (check_folder / 'compiled.json').write_text(json.dumps(compiled))
    text = render(collect(str(check_folder)))
    assert '`--compile` (128 sets; median seconds of one training step)' in text
    assert '| mz-full | 0.0712 | 0.0089 | 8.00× | 95.2 |' in text


def test_cli_writes_the_json_and_splices_the_readme(check_folder, tmp_path):
    out, readme = tmp_path / 'check.json', tmp_path / 'README.md'
    main(['collect', str(check_folder), '--out', str(out)])
    readme.write_text(f'# Benchmarks\n{BEGIN}\nold\n{END}\ntail\n')
    main(['render', str(out), '--readme', str(readme)])
    text = readme.read_text()
    assert 'old' not in text and text.endswith(f'{END}\ntail\n')
    assert render(json.loads(out.read_text())) in text


def test_docs_show_the_committed_check():
    # the docs' GPU-check section is the rendering of the committed JSON (not stale)
    docs = open('docs/benchmarks.md').read()
    section = docs.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    paths = sorted(glob.glob('bench/results/gpu_check_*.json'))
    assert paths, 'no committed GPU check (bench/results/gpu_check_<device>.json)'
    assert section == '\n\n'.join(render(json.load(open(p))) for p in paths)
