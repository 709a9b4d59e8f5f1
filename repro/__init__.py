"""mzattn.repro: the reproduction harness for the paper's tables."""
