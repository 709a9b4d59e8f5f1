from mzattn.repro.campaign import campaign_cells, status_lines
from mzattn.repro.cells import cell_path


def test_status_goes_on_past_an_unreadable_record(tmp_path):
    out = str(tmp_path)
    first = campaign_cells("paper-protocol")[0]
    path = tmp_path / cell_path(out, first)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "status": "ok", "metr')  # truncated by a full disk
    lines = status_lines("paper-protocol", out)
    (line,) = [line for line in lines if f"| {first.cell_id} |" in line]
    assert "| queued |" in line  # to be set aside and rerun when its turn comes
