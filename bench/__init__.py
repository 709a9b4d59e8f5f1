r"""Speed and memory benchmarks of :mod:`mzlayers` (import :obj:`mzattn.bench`).

Every benchmark measures ratios against a peer *in the same run*, with
interleaved repetitions after warm-up; see :file:`docs/benchmarks.md` for the
latest numbers and the commands that made them.
"""
