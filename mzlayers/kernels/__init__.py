r"""The attention kernels behind :func:`mzlayers.attention.set_attention`:
:mod:`.dense` (padded buckets and a masked SDPA), :mod:`.segment` (the
hand-written CPU kernel, with its caches), :mod:`.varlen` (PyTorch's
nested-jagged SDPA) and :mod:`.policy` (the table of the ``'auto'``
backend).  Nothing here is public API."""
