r"""What every room of the harness shares, importing nothing else of it: the
table spec (:mod:`.spec`), the registry of tables (:mod:`.registry`), the
filters of library noise (:mod:`.quiet`), fault handling and atomic writes
(:mod:`.faults`) and the environment a result records (:mod:`.envinfo`)."""
