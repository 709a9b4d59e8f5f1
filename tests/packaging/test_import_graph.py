r"""The import graph of every package (``mzlayers``, ``mzattn`` and the folders
mapped into it) has no cycle, and the rooms of :mod:`mzattn.repro` import
only the rooms below them.

The graph is read from the sources with :mod:`ast`: every ``import`` and
``from ... import`` statement, relative ones resolved, including those inside
functions and ``if TYPE_CHECKING`` blocks (an import deferred into a function
still runs, and a cycle it closes is still a cycle). An edge goes to the
module imported (and to the package a ``from`` statement names), but not to
the importer's own parent packages, which Python always initialises before
it. Imports by name at run time
(:func:`importlib.import_module`: the table registry, the CLI's delegated
commands) are not edges: they load what a caller asked for, after import.
"""
import ast
from pathlib import Path

import networkx as nx
import tomllib

ROOT = Path(__file__).resolve().parents[2]

#: The rooms of :mod:`mzattn.repro`, top to bottom; ``""`` is its top level
#: (the package itself, ``__main__``, ``cli``, ``demo``, ``campaign``).
ROOMS = ("", "tables", "analysis", "engine", "docker", "report", "training", "core")


def _modules() -> dict[str, tuple[Path, bool]]:
    r"""Module name -> (source file, whether it is a package's ``__init__``),
    for every folder that ``[tool.setuptools.package-dir]`` maps."""
    package_dir = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['setuptools'][
        'package-dir']
    modules = {}
    for name, folder in package_dir.items():
        for path in sorted((ROOT / folder).rglob('*.py')):
            parts = list(path.relative_to(ROOT / folder).with_suffix('').parts)
            if '__pycache__' in parts:
                continue
            is_package = parts[-1] == '__init__'
            modules['.'.join([name, *parts[:-1]] if is_package else [name, *parts])] = (
                path, is_package)
    return modules


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    r"""The dotted names that an import statement in :obj:`package` may load."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ''
    if node.level:
        parent = package.split('.')[:len(package.split('.')) - node.level + 1]
        base = '.'.join(parent + ([node.module] if node.module else []))
    return [base, *(f'{base}.{alias.name}' for alias in node.names)]


def import_graph() -> nx.DiGraph:
    r"""Our modules, with an edge from each to every one of ours it imports."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition('.')[0]
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, package):
                while target and target not in modules:  # `from pkg import function`
                    target = target.rpartition('.')[0]
                if target and not (name + '.').startswith(target + '.'):  # itself, a parent
                    graph.add_edge(name, target)
    return graph


def _room(module: str) -> str:
    parts = module.split('.')
    return parts[2] if len(parts) > 3 or (len(parts) == 3 and parts[2] in ROOMS) else ''


def test_the_graph_sees_imports_inside_functions_and_relative_ones():
    graph = import_graph()
    assert graph.has_edge('mzattn.repro.engine.launch', 'mzattn.repro.engine.slurm')  # in a def
    assert graph.has_edge('mzattn.repro.engine.runner', 'mzattn.repro.report.report')  # absolute
    assert graph.has_edge('mzattn.repro.engine.slurm', 'mzattn.repro.engine.runs')  # relative
    assert graph.has_edge('mzlayers.layout', 'mzlayers.validate')


def test_no_import_cycles():
    graph = import_graph()
    cycles = [sorted(component) for component in nx.strongly_connected_components(graph)
              if len(component) > 1]
    named = [' -> '.join([*cycle, cycle[0]]) for cycle in
             (next(nx.simple_cycles(graph.subgraph(component))) for component in cycles)]
    assert not named, 'import cycles:\n' + '\n'.join(named)


def test_every_repro_room_has_a_place():
    rooms = {path.parent.name for path in (ROOT / 'repro').glob('*/__init__.py')}
    assert rooms == set(ROOMS) - {''}, 'place a new room of repro/ in ROOMS, top to bottom'


def test_repro_rooms_import_only_the_rooms_below():
    graph = import_graph()
    upward = [f'{source} ({_room(source) or "top"}) imports {target} ({_room(target) or "top"})'
              for source, target in graph.edges
              if source.startswith('mzattn.repro') and target.startswith('mzattn.repro')
              and ROOMS.index(_room(target)) < ROOMS.index(_room(source))]
    assert not upward, 'imports against the rooms\' order:\n' + '\n'.join(upward)


def test_the_harness_tests_mirror_the_rooms():
    tests = ROOT / 'tests' / 'repro'
    rooms = {path.parent.name for path in tests.glob('*/__init__.py')}
    assert rooms <= set(ROOMS) - {''}, 'a folder of tests/repro/ that is not a room of repro/'
    top = {path.stem for path in tests.glob('test_*.py')}
    modules = {path.stem for path in (ROOT / 'repro').glob('*.py')}
    misplaced = sorted(name for name in top if name.removeprefix('test_') not in modules)
    assert not misplaced, f'tests of a room go in its folder of tests/repro/: {misplaced}'
