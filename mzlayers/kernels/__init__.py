r"""The attention kernels behind :func:`mzlayers.attention.set_attention`:
:mod:`.dense` (padded buckets and a masked SDPA) and :mod:`.segment` (the
hand-written CPU kernel, with its caches).  Nothing here is public API."""
