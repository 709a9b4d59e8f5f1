r"""The README is a front door: two commands first, short, and every python
block in it runs as written (read from the README itself, never copied)."""
import os.path as osp
import re

import pytest
import torch

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
README = osp.join(ROOT, "README.md")
MAX_PROSE_LINES = 155
r"""Lines of the README outside its generated verdict table: the table has one row per claim,
batching and reading, and a campaign adds rows as its cells finish and rebuilds it (with
:obj:`--readme`), so its length is the results', not the prose's."""


def _text(path: str = README) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def python_blocks(text: str) -> list[str]:
    r"""The bodies of the fenced ``python`` blocks of a markdown :obj:`text`."""
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_two_commands_come_first_and_the_readme_is_short():
    lines = _text().splitlines()
    first_block = lines[lines.index("```bash") + 1:lines.index("```bash") + 3]
    assert lines.index("```bash") < 5
    assert [line.split()[:2] for line in first_block] == [["make", "demo"], ["make", "test"]]
    begin = next(i for i, line in enumerate(lines) if line.startswith("<!-- verdicts:begin"))
    end = lines.index("<!-- verdicts:end -->")
    assert len(lines) - (end + 1 - begin) <= MAX_PROSE_LINES


@pytest.mark.parametrize("index", range(len(python_blocks(_text()))))
def test_readme_python_block_runs_as_written(index):
    block = python_blocks(_text())[index]
    exec(compile(block, f"README.md python block {index}", "exec"), {"__name__": "readme"})


#: Parameters of the generator path (Eq. 3's M_l, gates and W_mix, the generator FFN): they
#: meet the centre path only in a readout that reads generators (docs/layers.md).
GENERATOR_PATH = ("matrix_generators", ".mix", ".lin_gate.", ".ffn.generators.")


def test_readme_models_train_every_parameter():
    trained = 0
    for index, block in enumerate(python_blocks(_text())):
        scope = {"__name__": "readme"}
        exec(compile(block, f"README.md python block {index}", "exec"), scope)
        model = scope.get("model")
        if not isinstance(model, torch.nn.Module) or all(p.grad is None
                                                          for p in model.parameters()):
            continue  # a block that builds a model but trains none
        grads = dict(model.named_parameters())
        assert [name for name, p in grads.items() if p.grad is None] == []
        generator_path = [name for name in grads if any(k in name for k in GENERATOR_PATH)]
        assert generator_path, "the example has no MZ layer"
        assert [name for name in generator_path if not grads[name].grad.any()] == []
        trained += 1
    assert trained


def _links(path: str) -> list[str]:
    folder = osp.dirname(path)
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", _text(path))
    return [osp.relpath(osp.normpath(osp.join(folder, t)), ROOT) for t in targets
            if "://" not in t]


@pytest.mark.parametrize("page", ["README.md", "docs/README.md", "docs/baselines.md",
                                  "docs/datasets.md", "docs/reproduction.md",
                                  "docs/analysis.md", "docs/benchmarks.md",
                                  "docs/development.md"])
def test_relative_links_point_into_the_repository(page):
    missing = [link for link in _links(osp.join(ROOT, page))
               if not osp.exists(osp.join(ROOT, link))]
    assert not missing, f"{page} links to missing files {missing}"


def test_no_reference_outside_the_repository():
    for page in ["README.md", *(f"docs/{p}" for p in ("README.md", "baselines.md",
                 "datasets.md", "reproduction.md", "analysis.md", "benchmarks.md",
                 "development.md"))]:
        text = _text(osp.join(ROOT, page))
        assert "DESIGN §" not in text and "/work/" not in text and "../shared" not in text, page
