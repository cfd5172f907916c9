"""Runtime-distribution predictors for probabilistic backfilling (Nissimov & Feitelson).

Plugins of the ``batsched_ml.distributions`` group (``--distribution``):
``hmm`` (the paper's hidden Markov model over 15-minute slices), ``user`` (the
same user's recent runtimes), ``forest`` (a random forest over the runtime bins
with the classification features) and ``walltime`` (no history: point masses).
"""

from .base import RuntimeDistribution, WalltimeOnly
from .bins import RuntimeBins

__all__ = ["RuntimeBins", "RuntimeDistribution", "WalltimeOnly"]
