r"""One cell's training and its record: the Lightning module
(:mod:`.lightning_module`) and data module (:mod:`.datamodule`, real data
from :mod:`.real_data`), the cell itself (:mod:`.cells`) with its
checkpoints (:mod:`.checkpoints`), stages (:mod:`.stages`), learning curve
(:mod:`.history`), progress lines (:mod:`.progress`) and twins
(:mod:`.twins`)."""
