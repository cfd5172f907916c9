"""The environment's Gymnasium id, and its registration (importing Gymnasium only when asked)."""

from __future__ import annotations

ENV_ID = "batsched_ml/Scheduling-v0"


def register() -> None:
    """Register :data:`ENV_ID` with Gymnasium (idempotent)."""
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="batsched_ml.rl.env:SchedulingEnv")
