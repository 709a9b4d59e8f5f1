r"""``python -m mzattn.repro`` is ``mzattn-repro``."""
import sys

from mzattn.repro.cli import main

sys.exit(main())
