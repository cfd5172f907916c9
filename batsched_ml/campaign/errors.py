"""The one error of a campaign file that cannot be run as written."""

from __future__ import annotations

__all__ = ["CampaignError"]


class CampaignError(ValueError):
    """A campaign file that cannot be run as written (the CLI prints it on one line, exit 2)."""
