import csv
import importlib.util
import itertools
import os

import mzattn.datasets.qm9 as qm9
import pytest
import torch
from mzattn.datasets.qm9 import (
    FEATURE_NAMES,
    QM9,
    QM9_TARGETS,
    TARGET_NAMES,
    MoleculeFailure,
    atom_features,
    molecule_from_xyz,
    qm9_split,
    read_qm9pack,
)

needs_qm9pack = pytest.mark.skipif(importlib.util.find_spec("qm9pack") is None,
                                   reason="qm9pack is not installed")

# QM9 molecule 1 (methane) and 3 (water), dsgdb9nsd_000001.xyz / _000003.xyz.
METHANE = (["C", "H", "H", "H", "H"], [
    [-0.0126981359, 1.0858041578, 0.0080009958],
    [0.0021504160, -0.0060313176, 0.0019761204],
    [1.0117308433, 1.4637511618, 0.0002765748],
    [-0.5408150690, 1.4475266138, -0.8766437152],
    [-0.5238136345, 1.4379326443, 0.9063972942],
])
WATER = (["O", "H", "H"], [
    [-0.0343604951, 0.9775395708, 0.0076015923],
    [0.0647664923, 0.0205721989, 0.0015346341],
    [0.8717903737, 1.3007924048, 0.0006931336],
])
# gdb9.sdf.csv rows of the same molecules (deepchem's gdb9.tar.gz).
SDF_CSV_HEADER = ("mol_id,A,B,C,mu,alpha,homo,lumo,gap,r2,zpve,u0,u298,h298,g298,cv,"
                  "u0_atom,u298_atom,h298_atom,g298_atom")
SDF_CSV_ROWS = (
    "gdb_1,157.7118,157.70997,157.70699,0.0,13.21,-0.3877,0.1171,0.5048,35.3641,0.044749,"
    "-40.47893,-40.476062,-40.475117,-40.498597,6.469,-395.9995,-398.6433,-401.0146,-372.4718",
    "gdb_3,799.58812,437.90386,283.89492,1.8511,6.31,-0.2928,0.0687,0.3615,19.0002,0.021375,"
    "-76.404702,-76.401867,-76.400922,-76.422349,6.002,-201.5089,-202.6528,-204.1361,-188.1877",
)


def test_target_table_follows_table_28():
    assert TARGET_NAMES == ("mu", "alpha", "homo", "lumo", "gap", "r2", "zpve", "u0", "u298",
                            "h298", "g298", "cv")
    units = {t.name: t.unit for t in QM9_TARGETS}
    assert units["mu"] == qm9.DEBYE and units["alpha"] == qm9.BOHR3
    assert units["r2"] == qm9.BOHR2 and units["cv"] == qm9.CAL_PER_MOL_K
    assert {units[t] for t in ("homo", "lumo", "gap", "zpve", "u0", "g298")} == {qm9.HARTREE}
    assert len(FEATURE_NAMES) == 9


@pytest.mark.parametrize("molecule, num_atoms, heavy", [(METHANE, 5, 1), (WATER, 3, 3)])
def test_features_from_xyz(molecule, num_atoms, heavy):
    elements, coords = molecule
    mol, used_hueckel = molecule_from_xyz(elements, coords)
    assert not used_hueckel and mol.GetNumBonds() == num_atoms - 1
    x, pos, z = atom_features(mol)
    assert x.shape == (num_atoms, 9) and pos.shape == (num_atoms, 3)
    torch.testing.assert_close(x[:, :5].sum(-1), torch.ones(num_atoms))
    torch.testing.assert_close(x[:, 5:8], torch.tensor(coords, dtype=torch.float32))
    torch.testing.assert_close(pos, x[:, 5:8])
    assert z.tolist() == [{"H": 1, "C": 6, "O": 8}[e] for e in elements]
    charge = x[:, 8]
    assert abs(float(charge.sum())) < 1e-5  # neutral molecule
    assert float(charge[0]) < 0 < float(charge[1:].min())  # C/O negative, H positive


def test_features_fail_loudly():
    with pytest.raises(MoleculeFailure, match="bond perception"):
        molecule_from_xyz(["C", "C"], [[0, 0, 0], [8, 0, 0]])
    mol, _ = molecule_from_xyz(["S", "H", "H"], [[0, 0, 0], [1.34, 0, 0], [0, 1.34, 0]])
    with pytest.raises(MoleculeFailure, match="outside H/C/N/O/F"):
        atom_features(mol)


def test_split_is_the_papers_and_reproducible():
    split = qm9_split(130_831, seed=0)
    assert (len(split.train), len(split.val), len(split.test)) == (40_000, 5_000, 5_000)
    everything = torch.cat([split.train, split.val, split.test])
    assert everything.unique().numel() == 50_000 and int(everything.max()) < 130_831
    again = qm9_split(130_831, seed=0)
    assert again.hash == split.hash and torch.equal(again.test, split.test)
    assert qm9_split(130_831, seed=1).hash != split.hash
    full = qm9_split(10, subset=None)
    assert sorted(torch.cat(full[:3]).tolist()) == list(range(10))
    with pytest.raises(ValueError, match="fractions"):
        qm9_split(10, subset=None, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="subset"):
        qm9_split(10, subset=11)


# ------------------------------------------------------------- qm9pack source


@pytest.fixture
def tiny_qm9pack(tmp_path, monkeypatch):
    r"""Three qm9pack-format CSVs: the first six molecules of the installed
    package plus one molecule RDKit cannot bond (two C atoms 8 Å apart)."""
    source = qm9.qm9pack_data_dir()
    folder = tmp_path / "qm9pack"
    folder.mkdir()
    with open(os.path.join(source, "qm9_part1.csv"), newline="") as f:
        header, *rows = list(itertools.islice(csv.reader(f), 7))
    bad = dict(zip(header, rows[0], strict=True))
    bad.update(Index="999999", SMILES="[C].[C]", N_atoms="2", Elements="['C','C']",
               XYZ_Ang="[[0.,0.,0.],[8.,0.,0.]]")
    parts = {"qm9_part1.csv": rows[:5], "qm9_part2.csv": [],
             "qm9_part3.csv": [rows[5], [bad[h] for h in header]]}
    for name, part in parts.items():
        with open(folder / name, "w", newline="") as f:
            csv.writer(f, quoting=csv.QUOTE_NONNUMERIC).writerows([header, *part])
    monkeypatch.setattr(qm9, "qm9pack_data_dir", lambda: str(folder))
    return str(tmp_path / "root")


@needs_qm9pack
def test_qm9pack_records():
    path = os.path.join(qm9.qm9pack_data_dir(), "qm9_part1.csv")
    records = list(itertools.islice(read_qm9pack([path]), 3))
    (methane, elements, coords), (water, *_) = records[0], records[2]
    assert methane.index == 1 and methane.smiles == "C" and elements == METHANE[0]
    torch.testing.assert_close(torch.tensor(coords), torch.tensor(METHANE[1]))
    target = dict(zip(TARGET_NAMES, methane.targets, strict=True))
    assert target["mu"] == 0.0 and target["alpha"] == 13.21 and target["u0"] == -40.47893
    assert water.index == 3 and water.smiles == "O"
    assert dict(zip(TARGET_NAMES, water.targets, strict=True))["mu"] == 1.8511


@needs_qm9pack
def test_qm9_from_qm9pack(tiny_qm9pack):
    dataset = QM9(tiny_qm9pack)
    assert len(dataset) == 6
    assert repr(dataset).startswith("QM9(6, source='qm9pack'")
    methane, water = dataset[0], dataset[2]
    assert methane.x.shape == (5, 9) and methane.y.shape == (1, 12)
    assert methane.idx.item() == 1 and methane.smiles == "C"
    assert methane.y[0, 0] == 0.0 and methane.y[0, 1] == pytest.approx(13.21)
    assert water.x.shape == (3, 9) and water.y[0, 0] == pytest.approx(1.8511)
    for data in dataset:
        assert abs(float(data.x[:, 8].sum())) < 1e-4
    summary = dataset.summary()
    assert summary["num_raw"] == 7 and summary["num_items"] == 6
    assert summary["num_failures"] == 1
    assert summary["failures"][0]["idx"] == 999999
    assert "bond perception" in summary["failures"][0]["reason"]
    assert summary["num_topology_mismatch_vs_smiles"] == 0
    assert summary["split"]["hash"] == dataset.split(seed=0).hash
    assert summary["processing_seconds"] >= 0


@needs_qm9pack
def test_qm9_target_selection_and_atomization(tiny_qm9pack):
    QM9(tiny_qm9pack)  # process once
    dataset = QM9(tiny_qm9pack, targets=["u0", "alpha"], atomization_energies=True)
    assert dataset.target_units == (qm9.HARTREE, qm9.BOHR3)
    assert dataset[0].y.shape == (1, 2) and dataset[0].y.dtype == torch.float32
    # Methane: U0 - (E_C + 4 E_H) = -40.47893 + 37.846772 + 4 * 0.500273 Ha.
    assert dataset[0].y[0, 0].item() == pytest.approx(-0.631066, abs=1e-6)
    assert dataset[0].y[0, 1].item() == pytest.approx(13.21)
    assert QM9(tiny_qm9pack, targets="mu")[2].y.tolist() == [[pytest.approx(1.8511)]]
    with pytest.raises(ValueError, match="targets"):
        QM9(tiny_qm9pack, targets=["U0"])


# ----------------------------------------------------------------- SDF source


def write_sdf_source(raw):
    from rdkit import Chem

    blocks = []
    for name, (elements, coords) in (("gdb_1", METHANE), ("gdb_3", WATER)):
        mol, _ = molecule_from_xyz(elements, coords)
        mol.SetProp("_Name", name)
        blocks.append(Chem.MolToMolBlock(mol))
    # A record RDKit reads but cannot sanitise (pentavalent carbon).
    bad = Chem.MolFromSmiles("C(C)(C)(C)(C)C", sanitize=False)
    bad.UpdatePropertyCache(strict=False)
    bad.SetProp("_Name", "gdb_2")
    blocks.insert(1, Chem.MolToMolBlock(bad, kekulize=False))
    raw.mkdir(parents=True)
    (raw / "gdb9.sdf").write_text("$$$$\n".join(blocks) + "$$$$\n")
    rows = [SDF_CSV_ROWS[0], SDF_CSV_ROWS[0].replace("gdb_1", "gdb_2", 1), SDF_CSV_ROWS[1]]
    (raw / "gdb9.sdf.csv").write_text("\n".join([SDF_CSV_HEADER, *rows]) + "\n")


def test_qm9_from_sdf(tmp_path):
    write_sdf_source(tmp_path / "raw")
    dataset = QM9(str(tmp_path), source="sdf", targets=["mu", "alpha"])
    assert len(dataset) == 2
    methane, water = dataset
    assert methane.idx.item() == 1 and water.idx.item() == 3
    assert methane.x.shape == (5, 9) and water.x.shape == (3, 9)
    torch.testing.assert_close(methane.y, torch.tensor([[0.0, 13.21]]))
    torch.testing.assert_close(water.y, torch.tensor([[1.8511, 6.31]]))
    torch.testing.assert_close(methane.x[:, 5:8], torch.tensor(METHANE[1]), atol=1e-4, rtol=0)
    summary = dataset.summary()
    assert summary["num_failures"] == 1 and summary["failures"][0]["name"] == "gdb_2"
    assert "sanitisation" in summary["failures"][0]["reason"]


def test_qm9_sdf_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="gdb9.tar.gz") as info:
        QM9(str(tmp_path), source="sdf")
    assert os.path.join(str(tmp_path), "raw", "gdb9.sdf") in str(info.value)
    with pytest.raises(ValueError, match="source"):
        QM9(str(tmp_path), source="xyz")


# ------------------------------------------------------------- full dataset


@pytest.mark.dataset
@needs_qm9pack
def test_full_qm9pack():
    r"""Processes (once, minutes) or loads the full qm9pack QM9 from
    ``$MZATTN_QM9_ROOT`` (default ``~/.cache/mzattn/qm9``)."""
    root = os.environ.get("MZATTN_QM9_ROOT", os.path.expanduser("~/.cache/mzattn/qm9"))
    dataset = QM9(root)
    summary = dataset.summary()
    assert summary["num_raw"] == 130_831
    assert summary["num_items"] + summary["num_failures"] == 130_831
    assert summary["num_failures"] < 0.01 * 130_831
    methane = dataset[0]
    assert methane.smiles == "C" and methane.x.shape == (5, 9)
    assert methane.y[0, 0] == 0.0 and methane.y[0, 1] == pytest.approx(13.21)
    charge_sums = torch.zeros(len(dataset)).index_add_(
        0, torch.repeat_interleave(torch.arange(len(dataset)), dataset.slices["x"].diff()),
        dataset.x[:, 8])
    # Gasteiger charges of neutral molecules sum to zero; RDKit's treatment
    # of formal charges leaves a residue on a handful of zwitterions.
    assert int((charge_sums.abs() > 1e-3).sum()) <= 10
    assert float(charge_sums.abs().max()) < 0.5
    assert int(dataset.slices["x"].diff().max()) == 29
    split = dataset.split(seed=0)
    assert (len(split.train), len(split.val), len(split.test)) == (40_000, 5_000, 5_000)


def test_native_bond_warnings_become_one_summary_line(capfd):
    # RDKit's extended-Hückel code writes to the C stderr, past RDKit's logger.
    with qm9.native_stderr_filtered(qm9.BOND_WARNING, "{} warnings silenced"):
        for index in range(3):
            os.write(2, f"!!! Warning !!! {qm9.BOND_WARNING} {index} and 1 (0.96 A)\n".encode())
        os.write(2, b"something else\n")
    out, err = capfd.readouterr()
    assert out == "3 warnings silenced\n"
    assert err == "something else\n"


def test_native_stderr_is_restored_when_processing_fails(capfd):
    with pytest.raises(RuntimeError), qm9.native_stderr_filtered("x", "{}"):
        os.write(2, b"kept\n")
        raise RuntimeError
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "kept\nafter\n"


# ----------------------------------------------- data errors name the row


@pytest.mark.parametrize("edit, message", [
    (lambda row: row.replace("13.21", "n/a", 1), "line 2, column 'alpha': 'n/a' is not a number"),
    (lambda row: row.rsplit(",", 3)[0], "line 2: 17 fields, the header has 20"),
    (lambda row: row + ",1.0", "line 2: 21 fields, the header has 20"),
])
def test_a_bad_sdf_csv_row_names_file_line_and_column(tmp_path, edit, message):
    write_sdf_source(tmp_path / "raw")
    csv_path = tmp_path / "raw" / "gdb9.sdf.csv"
    header, first, *rest = csv_path.read_text().splitlines()
    csv_path.write_text("\n".join([header, edit(first), *rest]) + "\n")
    with pytest.raises(ValueError) as info:
        QM9(str(tmp_path), source="sdf")
    assert str(info.value) == f"{csv_path}, {message}"


@needs_qm9pack
@pytest.mark.parametrize("column, value, message", [
    ("Dipole_debye", "abc", "column 'Dipole_debye': 'abc' is not a number"),
    ("Index", "4x", "column 'Index': '4x' is not an integer"),
    ("XYZ_Ang", "[[0.,1.,z]]", "column 'XYZ_Ang': '[[0.,1.,z]]' is not a number"),
])
def test_a_bad_qm9pack_value_names_file_line_and_column(tiny_qm9pack, column, value, message):
    path = os.path.join(qm9.qm9pack_data_dir(), "qm9_part1.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    rows[3][rows[0].index(column)] = value
    with open(path, "w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_NONNUMERIC).writerows(rows)
    with pytest.raises(ValueError) as info:
        QM9(tiny_qm9pack)
    assert str(info.value) == f"{path}, line 4, {message}"


@needs_qm9pack
def test_a_short_qm9pack_row_is_named(tiny_qm9pack):
    path = os.path.join(qm9.qm9pack_data_dir(), "qm9_part3.csv")
    with open(path) as f:
        lines = f.read().splitlines()
    lines[1] = lines[1].rsplit(",", 2)[0]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"line 2: \d+ fields, the header has \d+") as info:
        QM9(tiny_qm9pack)
    assert str(info.value).startswith(f"{path}, line 2: ")


def test_an_sdf_name_that_is_not_a_qm9_index_names_the_molecule(tmp_path):
    write_sdf_source(tmp_path / "raw")
    sdf = tmp_path / "raw" / "gdb9.sdf"
    sdf.write_text(sdf.read_text().replace("gdb_3", "aspirin"))
    csv_path = tmp_path / "raw" / "gdb9.sdf.csv"
    csv_path.write_text(csv_path.read_text().replace("gdb_3", "aspirin"))
    with pytest.raises(ValueError) as info:
        QM9(str(tmp_path), source="sdf")
    assert str(info.value) == (f"{sdf}: molecule 3 of the file is named 'aspirin', not a QM9 "
                               "index 'gdb_<N>': is it QM9's gdb9.sdf?")
