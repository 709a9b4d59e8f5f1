r"""Suggestions for a mistyped name (a table, a model, a column), as git and
pip make them. Import-light: the command line uses it before torch loads."""
import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    r"""``"; did you mean 'table3'?"`` naming the :obj:`choices` closest to
    :obj:`name` (:func:`difflib.get_close_matches`), or ``""`` when none is
    close."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=3)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
