r"""From cell records to what a reader sees: the records of a table
(:mod:`.results`, counted only when :mod:`.trust` allows), the claims'
checks (:mod:`.claims`), the convergence rule (:mod:`.convergence`) and
verdicts (:mod:`.verdicts`), the paper's numbers (:mod:`.paper_values`,
read from ``paper/*.yaml``), each table's report (:mod:`.report`) and
figures (:mod:`.figures`), and the folder's summary (:mod:`.summary`)."""
