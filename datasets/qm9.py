r"""QM9 as sets of atoms (paper Task H, App. D.5.2, Table 28)."""
import contextlib
import csv
import importlib.metadata
import importlib.util
import itertools
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from mzattn.extras import require

from ._io import SummarizedDataset, index_hash, missing_files_error

#: What RDKit's extended-Hückel code (YAeHMOP, used by bond perception for a
#: few thousand QM9 molecules) prints straight to the C stderr, past RDKit's
#: logger: one line per odd interatomic distance.
BOND_WARNING = "Distance between atoms"


@contextlib.contextmanager
def native_stderr_filtered(pattern: str, summary: str):
    r"""Sends file descriptor 2 (where C/C++ code writes, past Python's
    :obj:`sys.stderr` and RDKit's logger) to a temporary file while the block
    runs; then writes back the lines without :obj:`pattern` and prints
    :obj:`summary` formatted with the count of those with it, when any."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode(errors="replace").splitlines()
            kept = [line for line in lines if pattern not in line]
            if kept:
                print("\n".join(kept), file=sys.stderr)
            if len(kept) < len(lines):
                print(summary.format(len(lines) - len(kept)), flush=True)


# ------------------------------------------------------------------ units

DEBYE = "D"
BOHR3 = "bohr^3"
BOHR2 = "bohr^2"
HARTREE = "Ha"
CAL_PER_MOL_K = "cal/(mol K)"


class QM9Target(NamedTuple):
    name: str  # our name, also the column name in gdb9.sdf.csv
    symbol: str  # as printed in the paper's Table 28
    unit: str  # QM9's own unit, kept as is
    qm9pack_column: str  # column name in the qm9pack CSV files
    description: str


#: The 12 regression targets in the column order of the paper's Table 28,
#: in QM9's own units (Ramakrishnan et al., 2014). Energies are total
#: energies; ``atomization_energies=True`` subtracts the free-atom energies.
QM9_TARGETS: tuple[QM9Target, ...] = (
    QM9Target("mu", "μ", DEBYE, "Dipole_debye", "dipole moment"),
    QM9Target("alpha", "α", BOHR3, "Polarizability_bohr3", "isotropic polarizability"),
    QM9Target("homo", "HOMO", HARTREE, "HOMO_au", "HOMO energy"),
    QM9Target("lumo", "LUMO", HARTREE, "LUMO_au", "LUMO energy"),
    QM9Target("gap", "Gap", HARTREE, "HOMO_LUMO_gap_au", "HOMO-LUMO gap"),
    QM9Target("r2", "R²", BOHR2, "R2_bohr2", "electronic spatial extent"),
    QM9Target("zpve", "ZPVE", HARTREE, "ZPVE_au", "zero-point vibrational energy"),
    QM9Target("u0", "U₀", HARTREE, "InternalEnergy_0K_au", "internal energy at 0 K"),
    QM9Target("u298", "U₂₉₈", HARTREE, "InternalEnergy_298K_au", "internal energy at 298.15 K"),
    QM9Target("h298", "H₂₉₈", HARTREE, "Enthalphy_298K_au", "enthalpy at 298.15 K"),
    QM9Target("g298", "G₂₉₈", HARTREE, "GibbsFreeEnergy_298K_au", "free energy at 298.15 K"),
    QM9Target("cv", "C_v", CAL_PER_MOL_K, "Heatcapacity_Cv_cal_mol_K", "heat capacity at 298.15 K"),
)
TARGET_NAMES: tuple[str, ...] = tuple(t.name for t in QM9_TARGETS)

#: Atom types of the one-hot block of the features, in feature order.
ELEMENTS: tuple[str, ...] = ("H", "C", "N", "O", "F")
ATOMIC_NUMBERS: tuple[int, ...] = (1, 6, 7, 8, 9)
#: Column names of ``data.x``: one-hot H/C/N/O/F, xyz in Å, Gasteiger charge.
FEATURE_NAMES: tuple[str, ...] = (*(f"is_{e}" for e in ELEMENTS), "x", "y", "z", "gasteiger")

#: Free-atom energies (Hartree) of H, C, N, O, F at the QM9 level of theory
#: (B3LYP/6-31G(2df,p); QM9's ``atomref.txt``), for the energy targets.
ATOM_REFERENCE_HARTREE: dict[str, tuple[float, ...]] = {
    "u0": (-0.500273, -37.846772, -54.583861, -75.064579, -99.718730),
    "u298": (-0.498857, -37.845355, -54.582445, -75.063162, -99.717314),
    "h298": (-0.497912, -37.844411, -54.581501, -75.062219, -99.716370),
    "g298": (-0.510927, -37.861317, -54.598897, -75.079532, -99.733544),
}

QM9PACK_FILES: tuple[str, ...] = ("qm9_part1.csv", "qm9_part2.csv", "qm9_part3.csv")
SDF_FILES: tuple[str, ...] = ("gdb9.sdf", "gdb9.sdf.csv")
SDF_URL = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/gdb9.tar.gz"
SOURCES: tuple[str, ...] = ("qm9pack", "sdf")

#: The paper's protocol: 50K molecules split 80/10/10.
PAPER_SUBSET = 50_000
PAPER_FRACTIONS = (0.8, 0.1, 0.1)


def qm9pack_data_dir() -> str:
    r"""The folder of the CSV files shipped by the PyPI package ``qm9pack``.
    Located without importing the package (its ``__init__`` needs the
    removed ``pkg_resources``)."""
    spec = importlib.util.find_spec("qm9pack")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "QM9(source='qm9pack') needs the PyPI package qm9pack: `pip install qm9pack`, "
            f"or use source='sdf' with {SDF_FILES} from {SDF_URL}"
        )
    return os.path.join(spec.submodule_search_locations[0], "data")


# ------------------------------------------------------------ featurisation


class MoleculeFailure(Exception):
    r"""RDKit could not build or featurise a molecule; the message says why."""


def molecule_from_xyz(elements: Sequence[str], xyz: Sequence[Sequence[float]]):
    r"""Builds an RDKit molecule from atom symbols and coordinates (Å),
    perceiving the bonds from the geometry with
    :func:`rdkit.Chem.rdDetermineBonds.DetermineBonds` (neutral molecule).
    Strained ring systems where the covalent-radius connectivity fails are
    retried with extended-Hückel connectivity. Returns ``(mol, used_hueckel)``;
    raises :class:`MoleculeFailure` when neither works."""
    Chem = require('rdkit.Chem', 'data')
    rdDetermineBonds = require('rdkit.Chem.rdDetermineBonds', 'data')

    lines = [f"{e} {x:.10f} {y:.10f} {z:.10f}" for e, (x, y, z) in zip(elements, xyz, strict=True)]
    block = f"{len(lines)}\n\n" + "\n".join(lines) + "\n"
    errors = []
    for use_hueckel in (False, True):
        mol = Chem.MolFromXYZBlock(block)
        if mol is None:
            raise MoleculeFailure("RDKit cannot parse the XYZ block")
        try:
            rdDetermineBonds.DetermineBonds(mol, charge=0, useHueckel=use_hueckel)
            return mol, use_hueckel
        except (ValueError, RuntimeError) as e:
            errors.append(str(e).strip().splitlines()[0])
    raise MoleculeFailure("bond perception failed: " + " / ".join(errors))


def atom_features(mol) -> tuple[Tensor, Tensor, Tensor]:
    r"""The per-atom features of App. A.2 Task H for a sanitised RDKit
    molecule with one conformer: one-hot H/C/N/O/F, xyz (Å) and the
    Gasteiger partial charge.

    Returns ``x [n, 9]`` (float32), ``pos [n, 3]`` and ``z [n]`` (atomic
    numbers); raises :class:`MoleculeFailure` for other elements or
    non-finite charges."""
    rdPartialCharges = require('rdkit.Chem.rdPartialCharges', 'data')

    try:
        rdPartialCharges.ComputeGasteigerCharges(mol)
    except (ValueError, RuntimeError) as e:
        raise MoleculeFailure(f"Gasteiger charges failed: {str(e).strip().splitlines()[0]}") from e
    symbols = [a.GetSymbol() for a in mol.GetAtoms()]
    unknown = sorted(set(symbols) - set(ELEMENTS))
    if unknown:
        raise MoleculeFailure(f"elements outside H/C/N/O/F: {unknown}")
    charge = torch.tensor([a.GetDoubleProp("_GasteigerCharge") for a in mol.GetAtoms()])
    if not bool(torch.isfinite(charge).all()):
        raise MoleculeFailure("non-finite Gasteiger charge")
    type_index = torch.tensor([ELEMENTS.index(s) for s in symbols])
    pos = torch.from_numpy(mol.GetConformer().GetPositions())
    one_hot = torch.nn.functional.one_hot(type_index, len(ELEMENTS)).double()
    x = torch.cat([one_hot, pos, charge[:, None]], dim=-1).float()  # [n, 9]
    z = torch.tensor(ATOMIC_NUMBERS)[type_index]
    return x, pos.float(), z


def canonical_skeleton(mol) -> str:
    r"""Canonical SMILES without hydrogens and stereo, to compare bond
    topologies."""
    Chem = require('rdkit.Chem', 'data')

    return Chem.MolToSmiles(Chem.RemoveAllHs(mol), isomericSmiles=False)


# --------------------------------------------------------------- raw readers


class RawMolecule(NamedTuple):
    index: int  # QM9 molecule index (1 ... 133885)
    smiles: str
    targets: list[float]  # in QM9_TARGETS order


QM9_NAME = re.compile(r"gdb_([0-9]+)")
r"""The name of a molecule in ``gdb9.sdf`` and ``mol_id`` in
``gdb9.sdf.csv``: :obj:`gdb_{QM9 index}`."""


def _csv_rows(path: str, required: Sequence[str], hint: str = "") -> Iterator[tuple[int, dict]]:
    r"""Yields ``(line, row)`` for every row of the CSV file :obj:`path`
    (``line`` is the file's line number of the row). A header without the
    :obj:`required` columns, or a row with more or fewer fields than the
    header, raises a :class:`ValueError` that names the file (and the line)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise ValueError(f"{path}: columns {missing} missing{hint}")
        for row in reader:
            extra, values = row.pop(None, []), [v for v in row.values() if v is not None]
            if extra or len(values) != len(header):
                raise ValueError(f"{path}, line {reader.line_num}: "
                                 f"{len(values) + len(extra)} fields, the header has "
                                 f"{len(header)}")
            yield reader.line_num, row


def _field(path: str, line: int, row: dict, column: str, parse: Callable = float):
    r""":obj:`parse(row[column])`; a value it rejects raises a
    :class:`ValueError` naming the file, the line and the column."""
    try:
        return parse(row[column])
    except ValueError:
        value = row[column] if len(row[column]) <= 40 else row[column][:40] + "..."
        raise ValueError(f"{path}, line {line}, column {column!r}: {value!r} is not "
                         f"{'an integer' if parse is int else 'a number'}") from None


def _coordinates(text: str) -> list[float]:
    # "[[x,y,z],...]" with numbers such as "0." (not JSON)
    return [float(v) for v in re.split(r"[\[\],\s]+", text) if v]


QM9PACK_COLUMNS: tuple[str, ...] = ("Index", "SMILES", "Elements", "XYZ_Ang",
                                    *(t.qm9pack_column for t in QM9_TARGETS))
r"""The columns of the qm9pack CSV files that :func:`read_qm9pack` reads."""


def read_qm9pack(paths: Sequence[str]) -> Iterator[tuple[RawMolecule, list[str], list]]:
    r"""Yields ``(record, elements, xyz)`` per molecule of the qm9pack CSVs.
    A short row or a value that is not a number raises a
    :class:`ValueError` naming the file, the line and the column."""
    for path in paths:
        for line, row in _csv_rows(path, QM9PACK_COLUMNS):
            elements = row["Elements"].strip("[]").replace("'", "").split(",")
            flat = _field(path, line, row, "XYZ_Ang", _coordinates)
            if len(flat) != 3 * len(elements):
                raise ValueError(f"{path}, line {line}: molecule {row['Index']} has "
                                 f"{len(elements)} atoms but {len(flat)} coordinates")
            record = RawMolecule(
                index=_field(path, line, row, "Index", int),
                smiles=row["SMILES"],
                targets=[_field(path, line, row, t.qm9pack_column) for t in QM9_TARGETS],
            )
            yield record, elements, [flat[i : i + 3] for i in range(0, len(flat), 3)]


def _read_sdf_targets(path: str) -> dict[str, list[float]]:
    hint = f"; expected the gdb9.sdf.csv header mol_id,A,B,C,{','.join(TARGET_NAMES)},..."
    return {row["mol_id"]: [_field(path, line, row, t) for t in TARGET_NAMES]
            for line, row in _csv_rows(path, ("mol_id", *TARGET_NAMES), hint)}


# ------------------------------------------------------------------- splits


class QM9Split(NamedTuple):
    train: Tensor
    val: Tensor
    test: Tensor
    hash: str


def qm9_split(
    num_molecules: int,
    seed: int = 0,
    subset: int | None = PAPER_SUBSET,
    fractions: tuple[float, float, float] = PAPER_FRACTIONS,
) -> QM9Split:
    r"""The paper's split (App. A.2 Task H): a random subset of
    :obj:`subset` molecules (all if :obj:`None`), cut 80/10/10 into
    train/val/test. Deterministic in :obj:`seed` (NumPy PCG64); the returned
    :obj:`hash` identifies the exact indices."""
    if subset is not None and not 0 < subset <= num_molecules:
        raise ValueError(f"subset must be in [1, {num_molecules}], got {subset}")
    if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, "
                         f"got {fractions}")
    n = num_molecules if subset is None else subset
    perm = np.random.default_rng(seed).permutation(num_molecules)[:n]
    n_train, n_val = round(fractions[0] * n), round(fractions[1] * n)
    parts = np.split(perm, [n_train, n_train + n_val])
    train, val, test = (torch.from_numpy(np.sort(p)) for p in parts)
    return QM9Split(train, val, test, index_hash(train, val, test))


# ------------------------------------------------------------------ dataset


class QM9(SummarizedDataset):
    r"""QM9 (Ramakrishnan et al., 2014) as sets of atoms, the input of the
    paper's Task H (App. A.2, App. D.5.2, Table 28): every molecule is a set of
    up to 29 atoms with 9 features — one-hot H/C/N/O/F, Cartesian coordinates
    in Å and the Gasteiger partial charge — and up to 12 regression targets.

    Two raw sources:

    - ``"qm9pack"`` (default): the CSV files shipped with the PyPI package
      `qm9pack <https://pypi.org/project/qm9pack/>`_ (130,831 molecules: QM9
      without the 3,054 molecules that failed its geometry consistency check;
      B3LYP coordinates, SMILES, properties). RDKit perceives the bonds from
      the XYZ coordinates (covalent radii, then extended Hückel for strained
      rings where that fails).
    - ``"sdf"``: a user's ``gdb9.sdf`` + ``gdb9.sdf.csv`` (133,885 molecules,
      from ``gdb9.tar.gz`` at :obj:`SDF_URL`) in :obj:`root/raw/`; the bonds
      are those of the SDF file.

    Gasteiger charges come from RDKit. Molecules RDKit cannot build are
    never dropped silently: :meth:`summary` counts and lists them with the
    reason. The summary also counts molecules whose bond topology perceived
    from the XYZ coordinates differs from the source's SMILES (kept).

    Targets are selected by name from :obj:`QM9_TARGETS` (Table 28 order:
    ``mu, alpha, homo, lumo, gap, r2, zpve, u0, u298, h298, g298, cv``), in
    QM9's own units (Debye, bohr³, Hartree, bohr², cal/(mol K)). Energies
    are total energies unless :obj:`atomization_energies` is set.

    Args:
        root (str): Root folder; processed files go to :obj:`root/processed`
            and the SDF source is read from :obj:`root/raw`.
        targets (Sequence[str], optional): Target names, in the order of the
            columns of ``data.y``. (default: all 12, Table 28 order)
        source (str, optional): ``"qm9pack"`` or ``"sdf"``.
            (default: :obj:`"qm9pack"`)
        atomization_energies (bool, optional): Subtract the free-atom
            energies (:obj:`ATOM_REFERENCE_HARTREE`) from ``u0``, ``u298``,
            ``h298`` and ``g298``. (default: :obj:`False`)
        transform, pre_transform, pre_filter (callable, optional): As in
            :class:`~torch_geometric.data.InMemoryDataset`.
        force_reload (bool, optional): Reprocess even if cached.
            (default: :obj:`False`)
        num_molecules (int, optional): Process only the first
            :obj:`num_molecules` raw molecules (a seconds-long subset for
            tests and smoke runs, cached separately); all if :obj:`None`.
            (default: :obj:`None`)

    Shapes:
        - **x** :math:`(n, 9)`, **pos** :math:`(n, 3)`, **z** :math:`(n)`
          per molecule; **y** :math:`(1, T)` with :math:`T` = ``len(targets)``;
          ``idx`` (QM9 index) and ``smiles`` per molecule.

    **STATS:**

    .. list-table::
        :widths: 20 12 10 10 10 10
        :header-rows: 1

        * - Source
          - #molecules
          - #atoms (avg)
          - #features
          - #targets
          - processing
        * - qm9pack 1.0.3
          - 130,831 (less failures, see summary)
          - ~18.0
          - 9
          - 12
          - a few minutes, once
    """

    VERSION = 1

    def __init__(
        self,
        root: str,
        targets: Sequence[str] = TARGET_NAMES,
        source: str = "qm9pack",
        atomization_energies: bool = False,
        transform: Callable | None = None,
        pre_transform: Callable | None = None,
        pre_filter: Callable | None = None,
        force_reload: bool = False,
        num_molecules: int | None = None,
    ) -> None:
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        if num_molecules is not None and num_molecules < 1:
            raise ValueError(f"num_molecules must be positive, got {num_molecules}")
        if isinstance(targets, str):
            targets = (targets,)
        unknown = [t for t in targets if t not in TARGET_NAMES]
        if unknown or not targets:
            raise ValueError(f"targets must be a non-empty subset of {TARGET_NAMES}, "
                             f"got {list(targets)}")
        self.source = source
        self.targets = tuple(targets)
        self.atomization_energies = atomization_energies
        self.num_molecules = num_molecules
        super().__init__(root, transform, pre_transform, pre_filter, force_reload=force_reload)
        self.load(self.processed_paths[0])
        self._data.y = self._select_targets(self._data.y, self._data.x)

    @property
    def raw_dir(self) -> str:
        return qm9pack_data_dir() if self.source == "qm9pack" else os.path.join(self.root, "raw")

    @property
    def raw_file_names(self) -> list[str]:
        return list(QM9PACK_FILES if self.source == "qm9pack" else SDF_FILES)

    @property
    def processed_file_names(self) -> list[str]:
        stem = f"qm9_{self.source}_v{self.VERSION}"
        if self.num_molecules is not None:
            stem += f"_first{self.num_molecules}"
        return [f"{stem}.pt", f"{stem}_summary.json"]

    @property
    def target_units(self) -> tuple[str, ...]:
        r"""The unit of each column of ``data.y``."""
        units = {t.name: t.unit for t in QM9_TARGETS}
        return tuple(units[t] for t in self.targets)

    def download(self) -> None:
        raise missing_files_error(
            f"QM9(source={self.source!r})", self.raw_paths, SDF_URL,
            f"extract {SDF_FILES} into {self.raw_dir}",
        )

    def _select_targets(self, y: Tensor, x: Tensor) -> Tensor:
        # y [M, 12] float64 total energies -> [M, T] float32; free-atom
        # energies from the per-molecule element counts (one-hot block of x).
        y = y.clone()
        if self.atomization_energies:
            sizes = self.slices["x"].diff()
            molecule = torch.repeat_interleave(torch.arange(sizes.numel()), sizes)
            counts = torch.zeros(sizes.numel(), len(ELEMENTS), dtype=torch.float64)
            counts.index_add_(0, molecule, x[:, : len(ELEMENTS)].double())  # [M, 5]
            for name, reference in ATOM_REFERENCE_HARTREE.items():
                col = TARGET_NAMES.index(name)
                y[:, col] -= counts @ torch.tensor(reference, dtype=torch.float64)
        return y[:, [TARGET_NAMES.index(t) for t in self.targets]].float()

    def process(self) -> None:
        RDLogger = require('rdkit.RDLogger', 'data')

        RDLogger.DisableLog("rdApp.*")
        start = time.perf_counter()
        process = self._process_qm9pack if self.source == "qm9pack" else self._process_sdf
        with native_stderr_filtered(BOND_WARNING, "QM9: bond perception printed {} "
                                    "'Distance between atoms ... is suspicious' warnings "
                                    "(silenced; the molecules are kept)"):
            data_list, info = process()
        info["source"] = self.source
        if self.source == "qm9pack":
            info["qm9pack_version"] = importlib.metadata.version("qm9pack")
        info["source_files"] = sorted(self.raw_paths)
        info["target_names"] = list(TARGET_NAMES)
        info["target_units"] = [t.unit for t in QM9_TARGETS]
        self.save_processed(data_list, info, start)

    @staticmethod
    def _to_data(record: RawMolecule, x: Tensor, pos: Tensor, z: Tensor) -> Data:
        # y is stored in float64: total energies of ~-400 Ha need the digits.
        y = torch.tensor([record.targets], dtype=torch.float64)
        return Data(x=x, pos=pos, z=z, y=y, idx=record.index, smiles=record.smiles)

    def _process_qm9pack(self) -> tuple[list[Data], dict]:
        Chem = require('rdkit.Chem', 'data')

        data_list, failures, hueckel, mismatches = [], [], [], []
        records = itertools.islice(read_qm9pack(self.raw_paths), self.num_molecules)
        for record, elements, xyz in records:
            try:
                mol, used_hueckel = molecule_from_xyz(elements, xyz)
                x, pos, z = atom_features(mol)
            except MoleculeFailure as e:
                failures.append({"idx": record.index, "smiles": record.smiles, "reason": str(e)})
                continue
            if used_hueckel:
                hueckel.append(record.index)
            reference = Chem.MolFromSmiles(record.smiles)
            if reference is None or canonical_skeleton(mol) != canonical_skeleton(reference):
                mismatches.append(record.index)
            data_list.append(self._to_data(record, x, pos, z))
        info = {
            "num_raw": len(data_list) + len(failures),
            "num_failures": len(failures),
            "failures": failures,
            "num_hueckel_bonds": len(hueckel),
            "hueckel_bonds": hueckel,
            "num_topology_mismatch_vs_smiles": len(mismatches),
            "topology_mismatch_vs_smiles": mismatches,
        }
        return data_list, info

    def _process_sdf(self) -> tuple[list[Data], dict]:
        Chem = require('rdkit.Chem', 'data')

        sdf_path, csv_path = self.raw_paths
        targets = _read_sdf_targets(csv_path)
        data_list, failures = [], []
        supplier = Chem.SDMolSupplier(sdf_path, removeHs=False, sanitize=False)
        for position, mol in enumerate(itertools.islice(supplier, self.num_molecules)):
            name = mol.GetProp("_Name") if mol is not None and mol.HasProp("_Name") else None
            if mol is not None and not QM9_NAME.fullmatch(name or ""):
                raise ValueError(f"{sdf_path}: molecule {position + 1} of the file is named "
                                 f"{name!r}, not a QM9 index 'gdb_<N>': is it QM9's gdb9.sdf?")
            try:
                if mol is None:
                    raise MoleculeFailure("RDKit cannot parse the SDF record")
                if name not in targets:
                    raise MoleculeFailure(f"no row for {name!r} in gdb9.sdf.csv")
                try:
                    Chem.SanitizeMol(mol)
                except (ValueError, RuntimeError) as e:
                    raise MoleculeFailure(f"sanitisation failed: {e}") from e
                x, pos, z = atom_features(mol)
            except MoleculeFailure as e:
                failures.append({"record": position, "name": name, "reason": str(e)})
                continue
            index = int(QM9_NAME.fullmatch(name).group(1))
            record = RawMolecule(index, Chem.MolToSmiles(Chem.RemoveHs(mol)), targets[name])
            data_list.append(self._to_data(record, x, pos, z))
        info = {
            "num_raw": len(data_list) + len(failures),
            "num_failures": len(failures),
            "failures": failures,
        }
        return data_list, info

    def split(
        self,
        seed: int = 0,
        subset: int | None = PAPER_SUBSET,
        fractions: tuple[float, float, float] = PAPER_FRACTIONS,
    ) -> QM9Split:
        r"""The paper's 50K, 80/10/10 split of this dataset (see
        :func:`qm9_split`; :obj:`subset` is capped at the dataset size); use
        as ``dataset[split.train]``."""
        return qm9_split(len(self), seed, None if subset is None else min(subset, len(self)),
                         fractions)

    def summary(self, seed: int = 0) -> dict:
        r"""Processing summary (molecule count, failures with reasons,
        processing time, sources) plus the sizes and hash of the paper split
        for :obj:`seed`."""
        info = super().summary()
        split = self.split(seed)
        info["split"] = {"seed": seed, "train": len(split.train), "val": len(split.val),
                         "test": len(split.test), "hash": split.hash}
        info["targets"] = dict(zip(self.targets, self.target_units, strict=True))
        info["atomization_energies"] = self.atomization_energies
        return info

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({len(self)}, source={self.source!r}, "
                f"targets={list(self.targets)})")
