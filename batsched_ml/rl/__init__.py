"""Learned scheduling policies by reinforcement learning.

* :mod:`.env`: ``SchedulingEnv``, the Gymnasium environment ``batsched_ml/Scheduling-v0`` (the
  embedded simulator and the decision core, stepped one scheduling decision at a time);
* :mod:`.episodes`: job sequences sampled from a trace; :mod:`.agent`: the schedulers whose
  next job an agent chooses; :mod:`.observation`, :mod:`.reward`;
* :mod:`.evaluate`: a policy on fixed sequences, beside the classic orders;
* :mod:`.es` (CMA-ES, no deep-learning dependency) and :mod:`.ppo` (MaskablePPO, the ``[rl]``
  extra): training a scoring network, written as a file that ``--policy rl:FILE`` runs
  (``policies.network``);
* :mod:`.cli`: ``batsched-ml train-policy``.

Registration: ``import gymnasium`` then ``import batsched_ml.rl`` (or import
``batsched_ml.rl.env``, which always registers) makes ``gymnasium.make("batsched_ml/Scheduling-v0",
workload=..., ...)`` work; ``gymnasium.make("batsched_ml.rl:batsched_ml/Scheduling-v0", ...)`` does
both in one call. (Gymnasium 1.x no longer discovers environments through entry points, and this
package does not import Gymnasium by itself: the command line would pay for it at every start.)
"""

from __future__ import annotations

import sys

from .registration import ENV_ID, register

__all__ = ["ENV_ID", "register"]

if "gymnasium" in sys.modules:
    register()
