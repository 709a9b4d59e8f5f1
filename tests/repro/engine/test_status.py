from mzattn.repro.campaign import CAMPAIGNS, Entry, campaign_cells
from mzattn.repro.core.registry import load_spec
from mzattn.repro.engine.status import status_lines
from mzattn.repro.training.layout import cell_path


def test_status_goes_on_past_an_unreadable_record(tmp_path):
    out = str(tmp_path)
    first = campaign_cells("meb-corner")[0]
    path = tmp_path / cell_path(out, first)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "status": "ok", "metr')  # truncated by a full disk
    lines = status_lines(campaign_cells("meb-corner"), out, "full")
    (line,) = [line for line in lines if f"| {first.cell_id} |" in line]
    assert "| queued |" in line  # to be set aside and rerun when its turn comes


def test_status_estimates_the_cells_not_started(tmp_path):
    lines = status_lines(campaign_cells("meb-corner"), str(tmp_path), "full")
    rows = [line for line in lines if "| queued |" in line]
    assert len(rows) == 3 and all("| ≈ " in row for row in rows)
    hours = [float(row.split("| ≈ ")[1].split(" |")[0]) for row in rows]
    assert hours[2] > hours[0] > 0  # MZAttn-Full's steps cost more than Standard's
    assert "h more estimated for the others (the CPU time of one training step" in lines[-1]
    assert "ran at" not in lines[-1]  # no cell has both estimates


def test_status_counts_a_twin_of_a_cell_above_as_free(tmp_path, monkeypatch):
    monkeypatch.setitem(CAMPAIGNS, "twins", (
        Entry("table7", ("EGNN",), ("Quadratic TDOF L=4",)),
        Entry("table1", ("EGNN",), ("L=8", "L=4"))))
    lines = status_lines(campaign_cells("twins", profile="smoke"), str(tmp_path), "smoke")
    rows = {line.split(" | ")[1]: line for line in lines if line.startswith("| table")}
    assert "| twin of table7/EGNN__Quadratic_TDOF_L_4__s0 | 0/1 | — | 0.00 |" \
        in rows["EGNN__L_4__s0"]  # the Table 7 cell above trains its run
    assert "| queued |" in rows["EGNN__Quadratic_TDOF_L_4__s0"]
    assert "| queued |" in rows["EGNN__L_8__s0"] and "| ≈ " in rows["EGNN__L_8__s0"]


def test_status_shows_a_parked_cell_with_the_epochs_of_its_park(tmp_path, monkeypatch):
    import torch
    from mzattn.repro.training.history import FIELDS, write_csv_atomic
    from mzattn.repro.training.layout import checkpoint_dir, log_path, parked_dir
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    out, (cell,) = str(tmp_path), campaign_cells("one")
    rows = [dict.fromkeys(FIELDS, 1.0) | {"epoch": epoch, "epoch_time_s": 30.0 * epoch}
            for epoch in (1, 2)]
    parked = tmp_path / parked_dir(out, cell) / "last.ckpt"
    parked.parent.mkdir(parents=True)
    torch.save({"callbacks": {"History": {"rows": rows}}}, parked)  # as History keeps them
    cap = load_spec("table3").profile("full").max_epochs
    hours = 45.0 * (cap - 2) / 3600

    def line() -> str:
        lines = status_lines(campaign_cells("one"), out, "full")
        (found,) = [row for row in lines if f"| {cell.cell_id} |" in row]
        return found
    assert f"| parked | 2/{cap} | 45.0 | {hours:.2f} |" in line()  # a fresh clone's

    write_csv_atomic(rows + rows[:1], log_path(out, cell))  # a log past its park: resumes
    assert f"| parked | 2/{cap} | 30.0 | {30.0 * (cap - 2) / 3600:.2f} |  |" in line()  # 30, 60, 30

    write_csv_atomic(rows[:1], log_path(out, cell))  # resumed: its own checkpoint and log
    live = tmp_path / checkpoint_dir(out, cell) / "last.ckpt"
    live.parent.mkdir(parents=True)
    live.write_bytes(parked.read_bytes())
    assert f"| queued | 1/{cap} | 30.0 |" in line()


def test_a_cell_not_started_is_timed_on_the_epochs_of_its_other_seeds(tmp_path, monkeypatch):
    from mzattn.repro.engine import status
    from mzattn.repro.training.history import FIELDS, write_csv_atomic
    from mzattn.repro.training.layout import checkpoint_dir, log_path
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8", "d=32")),))
    cap = load_spec("table3").profile("full").max_epochs
    monkeypatch.setattr(status.CellRun, "cost", lambda run: 10.0 * cap)  # 10 s an epoch
    out = str(tmp_path)
    cells = {cell.cell_id: cell for cell in campaign_cells(
        "one", seeds=(0, 1, 2), batching=("masked", "padded"))}

    def log(cell_id: str, times: list[float]) -> None:  # and the checkpoint to resume from
        write_csv_atomic([dict.fromkeys(FIELDS, 1.0) | {"epoch": epoch + 1, "epoch_time_s": t}
                          for epoch, t in enumerate(times)], log_path(out, cells[cell_id]))
        live = tmp_path / checkpoint_dir(out, cells[cell_id]) / "last.ckpt"
        live.parent.mkdir(parents=True)
        live.write_bytes(b"")
    log("Standard__d_8__s0", [900.0, 10.0, 20.0, 30.0, 20.0, 950.0, 20.0])  # medians 20
    log("Standard__d_8__s1", [40.0, 40.0])  # median 40
    log("Standard__d_8__s0__padded", [500.0])  # another batching: another run
    lines = status_lines(list(cells.values()), out, "full")
    rows = {line.split(" | ")[1]: line for line in lines if line.startswith("| table3")}
    hours = 30.0 * cap / 3600  # the median of the two seeds' medians, 30 s
    assert f"| queued | 0/{cap} | 30.0 | {hours:.2f} (as s0, s1) |" in rows["Standard__d_8__s2"]
    padded = 500.0 * cap / 3600
    assert f"| 500.0 | {padded:.2f} (as s0) |" in rows["Standard__d_8__s2__padded"]
    probe = 10.0 * cap / 3600
    assert f"| queued | 0/{cap} | — | ≈ {probe:.2f} |" in rows["Standard__d_32__s1"]
    assert rows["Standard__d_8__s0"].startswith(  # its own epochs: the median of the last five
        f"| table3 | Standard__d_8__s0 | queued | 7/{cap} | 20.0 | {20 * (cap - 7) / 3600:.2f} |")
    measured = (20.0 * (cap - 7) + 40.0 * (cap - 2) + 500.0 * (cap - 1)) / 3600
    last = lines[-1]
    assert f"{measured:.1f} h of one core measured" in last
    assert f"{hours + 2 * padded:.1f} h for the cells not started from the epochs of" in last
    assert f"≈ {6 * probe:.1f} h more estimated for the others" in last  # the d=32 cells
    # the ratios of the cells with both: 3 (masked s2), 50 (padded s1 and s2)
    assert f"ran at 50.0× the probe (median of 3), which would make these ≈ " \
        f"{50 * 6 * probe:.1f} h." in last


def test_a_log_without_epoch_times_is_said_and_not_counted(tmp_path, monkeypatch, capsys):
    from mzattn.repro.training.layout import log_path
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    out, (cell,) = str(tmp_path), campaign_cells("one")
    path = tmp_path / log_path(out, cell)
    path.parent.mkdir(parents=True)
    path.write_text("epoch,train_loss,val_loss,val_metric,lr,epoch_time_s\n1,1,1,1,1,12.5\n"
                    "2,1,1,1,1,oops\n")
    (line,) = [row for row in status_lines(campaign_cells("one"), out, "full")
               if f"| {cell.cell_id} |" in row]
    assert "| queued | 0/" in line and "| ≈ " in line  # probed, as a cell not started
    assert f"{path}, line 3: epoch_time_s 'oops' is not a number" in capsys.readouterr().out


def test_a_log_without_a_checkpoint_restarts_at_its_epoch_time(tmp_path, monkeypatch):
    # a fresh clone keeps an unfinished cell's log (untracked), not its checkpoint: the cell
    # starts over, and its log still times its epochs
    from mzattn.repro.training.history import FIELDS, write_csv_atomic
    from mzattn.repro.training.layout import checkpoint_dir, log_path
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8",)),))
    out, (cell,) = str(tmp_path), campaign_cells("one")
    cap = load_spec("table3").profile("full").max_epochs
    write_csv_atomic([dict.fromkeys(FIELDS, 1.0) | {"epoch": epoch, "epoch_time_s": 20.0}
                      for epoch in range(1, cap - 1)], log_path(out, cell))

    def line() -> str:
        (found,) = [row for row in status_lines(campaign_cells("one"), out, "full")
                    if f"| {cell.cell_id} |" in row]
        return found
    assert line() == f"| table3 | {cell.cell_id} | queued | 0/{cap} | 20.0 | " \
        f"{20.0 * cap / 3600:.2f} | restarts: its log's {cap - 2} epochs have no checkpoint |"
    live = tmp_path / checkpoint_dir(out, cell) / "last.ckpt"
    live.parent.mkdir(parents=True)
    live.write_bytes(b"")  # resumed from it: two epochs left
    assert f"| queued | {cap - 2}/{cap} | 20.0 | {40.0 / 3600:.2f} |  |" in line()


def test_epochs_logged_before_are_read_at_the_pace_of_the_cells_that_ran_here(
        tmp_path, monkeypatch):
    # a fresh clone on a slower machine: the cells that resume from a checkpoint here run at
    # twice the epoch time their other seeds logged before, so every time of before doubles
    import json

    from mzattn.repro.engine.status import Plan
    from mzattn.repro.training.history import FIELDS, write_csv_atomic
    from mzattn.repro.training.layout import checkpoint_dir, log_path
    monkeypatch.setitem(CAMPAIGNS, "one", (Entry("table3", ("Standard",), ("d=8", "d=32")),))
    cap = load_spec("table3").profile("full").max_epochs
    out = str(tmp_path)
    cells = {cell.cell_id: cell for cell in campaign_cells("one", seeds=(0, 1, 2, 3))}

    def log(cell_id: str, epoch_s: float, *, here: bool = False, done: bool = False) -> None:
        cell = cells[cell_id]
        write_csv_atomic([dict.fromkeys(FIELDS, 1.0) | {"epoch": epoch, "epoch_time_s": epoch_s}
                          for epoch in (1, 2, 3)], log_path(out, cell))
        if here:  # resumes from its own checkpoint: its epochs ran here
            (tmp_path / checkpoint_dir(out, cell)).mkdir(parents=True, exist_ok=True)
            (tmp_path / checkpoint_dir(out, cell) / "last.ckpt").write_bytes(b"")
        if done:
            path = tmp_path / cell_path(out, cell)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"version": 1, "status": "ok", "history": []}))
    log("Standard__d_8__s0", 10.0, done=True)  # before (a record)
    log("Standard__d_8__s1", 20.0, here=True)  # here: 2x s0
    log("Standard__d_32__s0", 30.0)  # before, restarts (a log without a checkpoint)
    log("Standard__d_32__s1", 30.0, here=True)  # here, as fast as s0: 1x
    log("Standard__d_32__s2", 30.0, here=True)  # its before-seed is s0 alone too: 1x
    plan = Plan(list(cells.values()), out, "full")
    assert plan.pace() == (1.0, 3)  # the median of 2, 1, 1
    log("Standard__d_8__s2", 20.0, here=True)  # here, as s1: against s0, 2x
    log("Standard__d_32__s2", 90.0, here=True)  # against d=32 s0, 3x
    plan = Plan(list(cells.values()), out, "full")
    assert plan.pace() == (2.0, 4)  # the median of 2, 2, 1, 3
    hours = cap * 10.0 / 3600
    assert plan.hours_left(cells["Standard__d_8__s1"]) == (cap - 3) * 20.0 / 3600  # here
    # not started, with seeds that ran here: as they ran (the median of s1 and s2)
    assert plan.hours_left(cells["Standard__d_8__s3"]) == 2 * hours
    # a log of before without a checkpoint: restarts, at the pace
    assert plan.hours_left(cells["Standard__d_32__s0"]) == 2.0 * 3 * hours
    lines = status_lines(list(cells.values()), out, "full")
    rows = {line.split(" | ")[1]: line for line in lines if line.startswith("| table3")}
    assert f"| {2 * 3 * hours:.2f} (× 2.00) | restarts:" in rows["Standard__d_32__s0"]
    assert "Epochs here run at 2.00× those logged before (median of 4 cells" in lines[-1]
    log("Standard__d_8__s1", 20.0)  # s1's checkpoint gone: no longer here
    (tmp_path / checkpoint_dir(out, cells["Standard__d_8__s1"]) / "last.ckpt").unlink()
    plan = Plan(list(cells.values()), out, "full")
    # s3's seeds here: s2 alone (20 s); its estimate shows it is not paced
    assert plan.hours_left(cells["Standard__d_8__s3"]) == 2 * hours
    est = plan.estimate(plan.progress(cells["Standard__d_8__s3"]))
    assert est.seeds == (2,) and est.pace is None
