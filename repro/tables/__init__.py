r"""One spec per table of the paper, each also a script
(``python repro/tables/table03_meb.py --profile quick``): the
``tableNN_*.py`` files, :mod:`.egnn_comparison` (Table 7),
:mod:`.negative_transfer` (App. D.5.6) and the figure scripts, with the
spec pieces some tables share (:mod:`.hull_spec`, :mod:`.meb_spec`,
:mod:`.transfer`). :mod:`mzattn.repro.core.registry` maps the CLI's table
keys to these modules."""
