r"""Markdown tables of the benchmark results (ratios against the peer
measured in the same run)."""
import os
import tempfile
from functools import partial

from . import self_attention, set_pooling
from .overhead import BLOCK_MEMORY_TARGET, PAPER_RATIOS, RECOMPUTE_ROWS

BEGIN, END = '<!-- bench:begin -->', '<!-- bench:end -->'


def write_text_atomic(path: str, text: str) -> None:
    r"""Writes :obj:`text` to :obj:`path` through a temporary file and
    :func:`os.replace`, so a reader never sees a half-written file."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix='.tmp-')
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    os.replace(tmp, path)


def _mb(nbytes) -> str:
    return '—' if nbytes is None else f'{nbytes / 2**20:.0f}'


def _ratio(a, b) -> str:
    return '—' if not a or not b else f'{a / b:.2f}×'


def _workloads(suite, result: dict) -> list[str]:
    r"""Speed and memory of every implementation of :obj:`suite` against
    its :obj:`BASELINE`, workload by workload."""
    lines, baseline = [], suite.BASELINE
    for key, entry in result['results'].items():
        rows, anchor = entry['rows'], entry['rows'][baseline]
        if not lines:
            impls = list(suite.IMPLEMENTATIONS)
            lines = ['| workload / mode | padding | ' + ' | '.join(
                f'{i} speed (mem)' for i in impls) + f' | {baseline} ms |',
                '|' + ' --- |' * (len(impls) + 3)]
        cells = [f"{_ratio(anchor['median_s'], r['median_s'])} "
                 f"({_ratio(r.get('peak_bytes'), anchor.get('peak_bytes'))})"
                 if r else '—' for r in (rows.get(i) for i in impls)]
        lines.append(f"| {key} | {entry['padding_ratio']:.1f}× | " + ' | '.join(cells) +
                     f" | {anchor['median_s'] * 1e3:.1f} |")
    lines.append(f'\nSpeed = {baseline} median time / implementation median time (higher is '
                 f'faster); mem = peak memory / {baseline} peak memory (lower is better). '
                 + suite.NOTE)
    return lines


def _table30(result: dict) -> list[str]:
    lines = ['| config | params | inference | training step | peak memory (train) | '
             'FLOP ratio (train step) | FLOP ratio (one ISAB fwd) |',
             '| --- | --- | --- | --- | --- | --- | --- |']
    for config, e in result['results'].items():
        p, inf, tr = e['params'], e['inference'], e['train']
        lines.append(
            f"| {config} | {_ratio(p['mz-full'], p['standard'])} | "
            f"{_ratio(inf['mz-full']['median_s'], inf['standard']['median_s'])} | "
            f"{_ratio(tr['mz-full']['median_s'], tr['standard']['median_s'])} | "
            f"{_ratio(tr['mz-full'].get('peak_bytes'), tr['standard'].get('peak_bytes'))} | "
            f"{e['model_flop_ratio']:.2f}× | {e['isab_flop_ratio']:.2f}× |")
    lines.append(f"| paper (RTX 5090) | {PAPER_RATIOS['params']}× | "
                 f"{PAPER_RATIOS['inference']}× | {PAPER_RATIOS['train']}× | "
                 f"{PAPER_RATIOS['memory']}× | — | — |")
    small = result['results'].get('small')
    if small:
        measured = small['train']['mz-full']['median_s'] / small['train']['standard']['median_s']
        bound = 1.25 * small['model_flop_ratio']
        verdict = 'met' if measured <= bound else 'not met'
        lines.append(f"\nTarget (Small, {result['environment']['device']}): training-step "
                     f"ratio within 1.25× of the FLOP ratio — measured {measured:.2f}× vs "
                     f"bound {bound:.2f}×: **{verdict}**.")
    return lines + _blocks(result)


def _blocks(result: dict) -> list[str]:
    lines = ['', 'One MZ-ISAB vs one standard ISAB, forward + backward on the same batch '
             f'(target: peak memory ≤ {BLOCK_MEMORY_TARGET}×); `mz-isab-recompute` '
             f'keeps only block inputs and outputs and recomputes the block per chunk of whole '
             f'sets in backward (`checkpoint_rows={RECOMPUTE_ROWS}`):',
             '', '| config | block | step (ms) | time | peak (MB) | memory | target |',
             '| --- | --- | --- | --- | --- | --- | --- |']
    for config, e in result['results'].items():
        isab = e['block']['isab']
        lines.append(f"| {config} | isab | {isab['median_s'] * 1e3:.1f} | 1× | "
                     f"{_mb(isab.get('peak_bytes'))} | 1× | |")
        for name, mz in e['block'].items():
            if name != 'isab':
                lines.append(_block_row(config, name, mz, isab))
    return lines


def _block_row(config: str, name: str, mz: dict, isab: dict) -> str:
    peaks = isab.get('peak_bytes'), mz.get('peak_bytes')
    met = '—' if None in peaks else \
        ('met' if peaks[1] <= BLOCK_MEMORY_TARGET * peaks[0] else 'not met')
    return (f"| {config} | {name} | {mz['median_s'] * 1e3:.1f} | "
            f"{_ratio(mz['median_s'], isab['median_s'])} | {_mb(peaks[1])} | "
            f"{_ratio(peaks[1], peaks[0])} | {met} |")


def _scaling(result: dict) -> list[str]:
    r = result['results']
    lines = ['| set size n | fwd+bwd ms | peak MB |', '| --- | --- | --- |']
    lines += [f"| {n} | {e['median_s'] * 1e3:.1f} | {_mb(e.get('peak_bytes'))} |"
              for n, e in r['size'].items()]
    if 'size_slope' in r:
        lines.append(f"\nlog-log slope of time in n (n ≥ 100): **{r['size_slope']:.2f}** "
                     "(1 = linear, 2 = quadratic).")
    sweep = f" (n = {r['sweep_n']}, interleaved)" if 'sweep_n' in r else ''
    for key in ('num_generators', 'num_matrix_generators'):
        lines.append(f'\n| {key}{sweep} | fwd+bwd ms |\n| --- | --- |')
        lines += [f"| {v} | {e['median_s'] * 1e3:.1f} |" for v, e in r[key].items()]
    return lines


def _epoch(result: dict) -> list[str]:
    lines = ['| model | seconds per epoch (Task G, d=8) |', '| --- | --- |']
    lines += [f'| {m} | {s:.1f} |' for m, s in sorted(result['results'].items(),
                                                      key=lambda kv: kv[1])]
    return lines


RENDERERS = {'set_pooling': partial(_workloads, set_pooling),
             'self_attention': partial(_workloads, self_attention), 'table30': _table30,
             'scaling': _scaling, 'epoch': _epoch}
TITLES = {'set_pooling': 'Set pooling stack vs PyG',
          'self_attention': 'Self-attention (SAB) on ragged sets',
          'table30': 'Table 30: MZ-Full / Standard', 'scaling': 'MZ-ISAB scaling',
          'epoch': 'One epoch of Task G'}


def render_suite(suite: str, result: dict, title: bool = True) -> str:
    env = result['environment']
    head = [f"### {TITLES[suite]}", '',
            f"device `{env['device']}` ({env['gpu'] or env['cpu']}), torch {env['torch']}, "
            f"{env['threads']} threads", ''] if title else []
    return '\n'.join(head + RENDERERS[suite](result))


def splice_readme(path: str, text: str, begin: str = BEGIN, end: str = END) -> None:
    r"""Replaces the text between the markers :obj:`begin` and :obj:`end`
    (default: the bench markers) of :obj:`path`."""
    with open(path) as f:
        readme = f.read()
    if begin not in readme or end not in readme:
        raise ValueError(f"'{path}' has no {begin} ... {end} markers")
    head, rest = readme.split(begin, 1)
    write_text_atomic(path, head + begin + '\n' + text + '\n' + end + rest.split(end, 1)[1])
