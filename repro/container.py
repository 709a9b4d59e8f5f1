r"""Entry point of the Docker image (``docker/Dockerfile``):
``python -m mzattn.repro.container ARGS...`` runs ``mzattn-repro ARGS...`` as
the owner of the results folder, so that the files a container writes into a
mounted host folder belong to whoever owns that folder on the host.

The container starts as root. With ``-v "$PWD/results:/workspace/results"``
the folder is the host's: made by a user of uid 1001, the run switches to uid
1001; made by root (or by the engine, when it did not exist), the run stays
root. The image's own volume belongs to its user ``mzattn`` (uid 1000).
Started with ``--user UID:GID`` (what ``mzattn-repro docker run`` does), the
container is not root and runs as that user.
"""
import os
import sys

#: The results volume of the image (``WORKDIR`` plus the CLI's ``results``).
RESULTS = "/workspace/results"
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


def switch_user(uid: int, gid: int) -> None:
    r"""Drops root for :obj:`uid`/:obj:`gid` (no supplementary groups)."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def main(argv: list[str] | None = None) -> None:
    r"""Replaces this process with ``mzattn-repro`` :obj:`argv` (default:
    ``sys.argv[1:]``), run as :func:`run_as` says."""
    argv = sys.argv[1:] if argv is None else argv
    ids = run_as()
    if ids is not None:
        switch_user(*ids)
    os.execvp(COMMAND, [COMMAND, *argv])


if __name__ == "__main__":
    main()
