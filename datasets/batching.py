r"""The names of the batching modes (:mod:`mzattn.datasets.padding` pads
the sets), importable without torch, for command-line parsers."""

BATCHINGS = {
    "masked": "ragged sets, only the real elements attend and pool (the default)",
    "padded": "every set zero-padded to its batch's largest set, the pad rows attended "
              "as elements (no mask), as in the reference Set Transformer code",
    "padded-dataset": "every set zero-padded to the dataset's largest set (over its three "
                      "splits), the pad rows attended as elements (no mask)",
}
r"""The batching modes, the default first, each with what it does."""


def check_batching(batching: str) -> str:
    r"""Returns :obj:`batching` if it is one of :obj:`BATCHINGS`, else raises
    a :class:`ValueError` naming it."""
    if batching not in BATCHINGS:
        raise ValueError(f"'batching' must be one of {', '.join(BATCHINGS)} (got {batching!r})")
    return batching
