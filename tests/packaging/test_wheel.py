r"""The installed package (a wheel, not the editable install the tests run
on) has every module of the source tree: an editable install finds a
sub-package that ``pyproject.toml`` forgot, the Docker image does not."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]


def _package_dirs() -> dict[str, str]:
    r"""Top-level package name -> its source folder, from ``pyproject.toml``."""
    setuptools = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['setuptools']
    return {name: path for name, path in setuptools['package-dir'].items()}


def _expected_modules() -> set[str]:
    r"""Every ``.py`` file under a mapped folder and every data file that
    ``package-data`` names (the paper's values), as its path in the wheel."""
    setuptools = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['setuptools']
    patterns = setuptools.get('package-data', {})
    expected = set()
    for name, folder in _package_dirs().items():
        for source in (ROOT / folder).rglob('*.py'):
            relative = source.relative_to(ROOT / folder)
            if '__pycache__' not in relative.parts:
                expected.add('/'.join([*name.split('.'), *relative.parts]))
    for package, globs in patterns.items():  # a package or one of its sub-packages
        top = max((name for name in _package_dirs() if f'{package}.'.startswith(f'{name}.')),
                  key=len)
        folder = ROOT / _package_dirs()[top] / Path(*package.split('.')[len(top.split('.')):])
        for source in (path for pattern in globs for path in folder.glob(pattern)):
            expected.add('/'.join([*package.split('.'), *source.relative_to(folder).parts]))
    return expected


def test_the_paper_values_are_package_data():
    assert {path for path in _expected_modules() if path.endswith('.yaml')} == {
        f'mzattn/repro/report/paper/{path.name}'
        for path in (ROOT / 'repro/report/paper').glob('*.yaml')}


def test_every_source_folder_is_a_listed_package():
    setuptools = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['setuptools']
    listed = set(setuptools['packages'])
    found = set()
    for name, folder in _package_dirs().items():
        for init in (ROOT / folder).rglob('__init__.py'):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add('.'.join([name, *parts]))
    assert found - listed == set(), 'add these to [tool.setuptools] packages in pyproject.toml'


def test_the_wheel_holds_every_module(tmp_path):
    pytest.importorskip('setuptools')
    pytest.importorskip('wheel')
    source = tmp_path / 'src'
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        '.git', '.venv', 'results', 'data', 'build', '*.egg-info', '__pycache__', 'tests',
        'docs', '.ci'))
    done = subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '-q',
         str(source), '-w', str(tmp_path / 'dist')],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # setuptools warns of a folder it would import but not ship as a package (a data folder)
    assert 'absent from the `packages` configuration' not in done.stderr, done.stderr
    wheel, = (tmp_path / 'dist').glob('mzattn-*.whl')
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assert _expected_modules() - shipped == set()
    assert 'mzattn/repro/core/readings.toml' in shipped  # data read at run time
