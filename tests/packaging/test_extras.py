r"""The light install: :mod:`mzlayers` and the pure-PyTorch registry models
need none of the extras, and a missing extra names itself."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tomllib

from mzattn.extras import EXTRA_OF_MODULE, EXTRAS, MissingExtraError, missing_extra_hint, require

ROOT = Path(__file__).resolve().parents[2]

# Every optional module uninstalled: a None entry in sys.modules makes its
# import raise ModuleNotFoundError and importlib.util.find_spec return None.
_BLOCK = textwrap.dedent("""
    import sys
    BLOCKED = {blocked!r}
    sys.modules.update(dict.fromkeys(BLOCKED))
""")


def _run(code: str) -> subprocess.CompletedProcess:
    script = _BLOCK.format(blocked=sorted(EXTRA_OF_MODULE)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_core_dependencies_are_the_four_of_the_design():
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    names = sorted(r.split('>')[0].split('<')[0].split('=')[0].strip()
                   for r in project['dependencies'])
    assert names == ['numpy', 'scipy', 'torch', 'torch-geometric']
    extras = project['optional-dependencies']
    assert set(EXTRAS) <= set(extras)
    assert extras['all'] == ['mzattn[repro,data,mamba,docker]']


def test_makefile_setup_installs_all_and_dev():
    assert "-e '.[all,dev]'" in (ROOT / 'Makefile').read_text()


def test_import_mzlayers_imports_no_extra():
    result = _run("""
        import sys
        import mzlayers
        loaded = sorted({m.split('.')[0] for m, v in sys.modules.items() if v is not None}
                        & set(BLOCKED))
        assert not loaded, loaded
        print('ok')
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'ok'


def test_registry_models_build_and_run_without_extras():
    result = _run("""
        import torch
        from mzattn.baselines import build_model, list_models
        from mzattn.extras import MissingExtraError
        x, batch = torch.randn(7, 3), torch.tensor([0, 0, 0, 1, 1, 1, 1])
        for name in list_models():
            try:
                model = build_model(name, 3, 2).eval()
            except MissingExtraError as error:
                assert name == 'mamba-pma', (name, error)
                assert "pip install 'mzattn[mamba]'" in str(error), str(error)
                continue
            out = model(x, batch)
            out = out[0] if isinstance(out, tuple) else out
            assert out.shape == (2, 2), (name, out.shape)
        print('ok')
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'ok'


def test_cli_names_the_missing_extra():
    result = _run("""
        from mzattn.repro.cli import main
        raise SystemExit(main(['table28', '--profile', 'smoke']))
    """)
    assert result.returncode == 2, result.stderr
    assert "pip install 'mzattn[repro]'" in result.stderr


def test_require_names_the_extra():
    assert require('math', 'repro').sqrt(4.0) == 2.0
    with pytest.raises(MissingExtraError, match=r"pip install 'mzattn\[data\]'"):
        require('no_such_module_mzattn', 'data')
    with pytest.raises(ValueError, match='unknown extra'):
        require('math', 'nope')


def test_hint_only_for_optional_modules():
    assert 'mzattn[docker]' in missing_extra_hint(ModuleNotFoundError(name='docker.types'))
    assert missing_extra_hint(ModuleNotFoundError(name='numpy')) is None
