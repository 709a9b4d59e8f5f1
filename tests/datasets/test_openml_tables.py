import os

import numpy as np
import pytest
from mzattn.datasets.openml_tables import (
    TABLE_SOURCES,
    fit_width,
    load_table,
    read_table_csv,
)


def write_table_csv(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        f.writelines(",".join(str(v) for v in row) + "\n" for row in rows)


def test_read_table_csv_keeps_numeric_features_and_the_target(tmp_path):
    path = str(tmp_path / "abalone.csv")
    write_table_csv(path, ["Sex", "Length", "Class_number_of_rings", "Height"],
                    [["'M'", 0.5, 15, 0.1], ["F", 0.3, 7, "?"], ["I", 0.4, 9, 0.2]])
    features, target = read_table_csv(path, TABLE_SOURCES["abalone"])
    np.testing.assert_allclose(features, [[0.5, 0.1], [0.4, 0.2]])  # no sex, no '?' row
    np.testing.assert_allclose(target, [15, 9])


def test_read_table_csv_drops_a_second_target_and_accepts_target(tmp_path):
    path = str(tmp_path / "energy.csv")
    write_table_csv(path, ["a", "cooling_load", "b", "target"], [[1, 2, 3, 4], [5, 6, 7, 8]])
    features, target = read_table_csv(path, TABLE_SOURCES["energy_efficiency"])
    np.testing.assert_allclose(features, [[1, 3], [5, 7]])
    np.testing.assert_allclose(target, [4, 8])
    write_table_csv(path, ["a", "b"], [[1, 2]])
    with pytest.raises(ValueError, match="rename the target column to 'target'"):
        read_table_csv(path, TABLE_SOURCES["energy_efficiency"])


def test_fit_width_truncates_and_pads():
    wide = np.arange(20.0).reshape(2, 10)
    np.testing.assert_allclose(fit_width(wide), wide[:, :8])
    narrow = fit_width(np.ones((2, 5)))
    assert narrow.shape == (2, 8) and narrow[:, :5].all() and not narrow[:, 5:].any()


def test_diabetes_is_offline():
    from sklearn.datasets import load_diabetes

    features, target = load_table("diabetes", "/nonexistent")
    raw, raw_target = load_diabetes(return_X_y=True, scaled=False)
    assert features.shape == (442, 8)
    np.testing.assert_allclose(features, raw[:, :8])
    np.testing.assert_allclose(target, raw_target)


def test_missing_csv_names_the_file_the_openml_id_and_a_command(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_table("airfoil_self_noise", str(tmp_path))
    message = str(info.value)
    assert str(tmp_path / "airfoil_self_noise.csv") in message
    assert "https://www.openml.org/d/44957" in message and "fetch_openml(data_id=44957" in message
    with pytest.raises(ValueError, match="'name' must be one of"):
        load_table("iris", str(tmp_path))
