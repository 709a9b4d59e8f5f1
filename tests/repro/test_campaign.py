from mzattn.repro.campaign import CAMPAIGNS, campaign_cells, status_lines
from mzattn.repro.cells import cell_config, cell_path
from mzattn.repro.tables import load_spec


def test_status_goes_on_past_an_unreadable_record(tmp_path):
    out = str(tmp_path)
    first = campaign_cells("paper-protocol")[0]
    path = tmp_path / cell_path(out, first)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "status": "ok", "metr')  # truncated by a full disk
    lines = status_lines("paper-protocol", out)
    (line,) = [line for line in lines if f"| {first.cell_id} |" in line]
    assert "| queued |" in line  # to be set aside and rerun when its turn comes


def test_every_campaign_names_existing_rows_and_columns():
    for name in CAMPAIGNS:
        assert campaign_cells(name)


def test_meb_corner_runs_the_corner_at_the_papers_protocol():
    cells = campaign_cells("meb-corner")
    assert [c.row.label for c in cells] == ["Standard", "Standard (mean-pool head)",
                                            "MZAttn-Full"]
    config = cell_config(load_spec("table3-sensitivity"), cells[0], "full")
    assert config["task_overrides"] == {"d": 8, "max_clusters": 1, "spread_min": 1.0,
                                        "spread_max": 1.0}
    assert config["training"]["max_epochs"] == 200 and config["training"]["patience"] == 20
    assert all(c.table != "table3-sensitivity" for c in campaign_cells("paper-protocol"))
