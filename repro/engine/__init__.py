r"""What runs a table's cells: the table runner (:mod:`.runner`) and its
options (:mod:`.options`), the dispatcher (:mod:`.launch`) with what it
dispatches (:mod:`.runs`) to a worker pool (:mod:`.pool`) or SLURM
(:mod:`.slurm`), costliest first (:mod:`.cost`), or under a time limit those
that end in time first (:mod:`.backfill`); the progress of a campaign
(:mod:`.status`); committing finished cells
(:mod:`.commit`) and generating a profile's data (:mod:`.datagen`)."""
