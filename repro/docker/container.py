r"""Entry point of the Docker image (``docker/Dockerfile``):
``python -m mzattn.repro.docker.container ARGS...`` runs ``mzattn-repro ARGS...`` as
the owner of the results folder, so that the files a container writes into a
mounted host folder belong to whoever owns that folder on the host.

The container runs as the image's user ``mzattn`` (uid 1000), which owns the
image's own results volume, or as ``--user UID:GID`` (what ``mzattn-repro
docker run`` does, with ``--group-add mzattn``): nothing here needs root.
When a mounted results folder is not writable by the run's user, one line
says how to run as its owner.

Started as root (``--user 0``), the run switches to the owner of the results
folder: a host user of uid 1001 gets files of uid 1001; a folder of root (or
made by the engine, when it did not exist) keeps the run root.

Either way the run belongs to the group of the data caches (``mzattn``, gid
1000: given here when we switch, by ``--group-add mzattn`` otherwise) and
runs with umask 002, so that every run user can read and extend the caches,
which are group-writable and not world-writable.
"""
import os
import os.path as osp
import sys

#: The results volume of the image (``WORKDIR`` plus the CLI's ``results``).
RESULTS = "/workspace/results"
#: The data caches of the image (``MZATTN_DATA``).
DATA = "/opt/mzattn-data"
COMMAND = "mzattn-repro"


def run_as(results: str = RESULTS) -> tuple[int, int] | None:
    r"""``(uid, gid)`` to switch to: the owner of :obj:`results`, or
    :obj:`None` to stay as we are (not root, the folder is root's, or it does
    not exist)."""
    if os.geteuid() != 0:
        return None
    try:
        info = os.stat(results)
    except FileNotFoundError:
        return None
    return None if info.st_uid == 0 else (info.st_uid, info.st_gid)


def data_group(data: str | None = None) -> int | None:
    r"""The group of the data caches :obj:`data` (default:
    :obj:`$MZATTN_DATA`), or :obj:`None` when there are none."""
    try:
        return os.stat(data or os.environ.get("MZATTN_DATA", DATA)).st_gid
    except FileNotFoundError:
        return None


def switch_user(uid: int, gid: int, groups: list[int]) -> None:
    r"""Drops root for :obj:`uid`/:obj:`gid`, with :obj:`groups` as the
    only supplementary groups."""
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)


def main(argv: list[str] | None = None) -> None:
    r"""Replaces this process with ``mzattn-repro`` :obj:`argv` (default:
    ``sys.argv[1:]``), run as :func:`run_as` says, in the group of the data
    caches (:func:`data_group`) and with umask 002."""
    argv = sys.argv[1:] if argv is None else argv
    ids = run_as()
    if ids is not None:
        group = data_group()
        switch_user(*ids, groups=[] if group is None else [group])
    elif not os.access(RESULTS, os.W_OK | os.X_OK) and osp.isdir(RESULTS):
        print(f"[mzattn-repro] {RESULTS} is not writable by uid {os.geteuid()}: run as its owner, "
              'with docker run --user "$(id -u):$(id -g)" --group-add mzattn',
              file=sys.stderr, flush=True)
    os.umask(0o002)
    os.execvp(COMMAND, [COMMAND, *argv])


if __name__ == "__main__":
    main()
