r"""``python -m mzattn.baselines``: prints the registry's parameter table."""
from mzattn.baselines.registry import models_table

if __name__ == '__main__':
    print(models_table())
