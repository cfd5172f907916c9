"""Named presets: the recommended methods as one flag (``--preset NAME``, ``preset = "NAME"`` in a
campaign's ``[configs.NAME]``), each with where its settings come from.

A preset is a set of run settings -- :class:`~batsched_ml.config.declare.RunConfig` fields by name and
``-o`` options -- that a run starts from; what the run gives besides overrides it key by key (a
flag or a campaign key replaces the preset's value, an ``-o KEY`` replaces that option alone).
``batsched-ml presets`` lists each with the flags it expands to and its source: the paper and
table it reproduces, or the results file that measured it.

A preset is versioned: when the configuration behind a name changes (the measured best
classification moves on), the name stays, ``version`` goes up and ``changes`` says what changed
and why, newest last; ``PREFIX_run.json`` keeps the preset's name, version and expansion.

This module is data and a few pure functions: no import of the rest of the package.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

__all__ = ["PRESETS", "Preset", "PresetError", "expand", "get", "names"]


class PresetError(ValueError):
    """An unknown preset name (one line; the CLI exits 2)."""


@dataclass(frozen=True)
class Preset:
    """One named configuration: ``settings`` (RunConfig field -> value, as a campaign table writes
    them) and ``options`` (``-o`` key -> value)."""

    name: str
    summary: str
    settings: dict
    source: str
    options: dict = field(default_factory=dict)
    version: int = 1
    changes: tuple[str, ...] = ()  # "vN (date): what changed and why", one per version after the first

    def values(self) -> dict:
        """The settings with the options under ``options`` (a fresh copy): a RunConfig's keywords."""
        return {**self.settings, "options": dict(self.options)}


_SPF_48H = 172800  # seconds: Zrigui et al.'s "starvation prevention mechanism" as a 48 h threshold
_ZRIGUI = "Zrigui, Nesmachnow, Trystram et al., JPDC 2022, Table 7"

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("easy", "EASY backfilling, FCFS queue, textbook reservations (every result's baseline)",
           {"scheduler": "easy", "policy": "fcfs"},
           "Lifka 1995; Mu'alem & Feitelson, IEEE TPDS 2001 (`count` reservations); measured: "
           "benchmarks/results/easy.md, predictors.md (experiments/gaussier2015.toml, config easy: Gaussier et al. "
           "SC'15 Table 1)"),
    Preset("easy-spf-threshold", "EASY, shortest job first, jobs waiting over 48 h go first",
           {"scheduler": "easy", "policy": "spf", "starvation_threshold": _SPF_48H},
           f"{_ZRIGUI}, EASY-SPF (starvation prevention as a 48 h threshold); measured: "
           "benchmarks/results/classification.md, noise-floor.md (experiments/zrigui2022.toml, config base-spf)"),
    Preset("easy++", "EASY++: AVE2 runtime predictions, incremental correction, SJBF backfilling",
           {"scheduler": "easy", "policy": "fcfs", "predictor": "ave2", "correction": "incremental",
            "backfill_order": "sjbf"},
           "Tsafrir, Etsion & Feitelson, IEEE TPDS 18(6) 2007, as run in Gaussier et al. SC'15 Table 6; "
           "measured: benchmarks/results/predictors.md (experiments/gaussier2015.toml, config easy++)"),
    Preset("eloss-triple", "E-Loss regression predictions, incremental correction, SJBF backfilling",
           {"scheduler": "easy", "policy": "fcfs", "predictor": "eloss", "correction": "incremental",
            "backfill_order": "sjbf"},
           "Gaussier, Glesser, Reis & Trystram, SC'15, Table 7 (the cross-validated heuristic triple); "
           "measured: benchmarks/results/predictors.md (experiments/gaussier2015.toml, config eloss-triple)"),
    Preset("probabilistic", "probabilistic backfilling (tau = 0.05) on HMM runtime distributions",
           {"scheduler": "probabilistic", "policy": "fcfs", "distribution": "hmm"},
           "Nissimov & Feitelson, JSSPP 2007 (LNCS 4942, 2008), Tables 2 and 3; measured: "
           "benchmarks/results/probabilistic.md (experiments/nissimov2008.toml, config prob-hmm)"),
    Preset("zrigui2022-fcfs-ci", "EASY-FCFS, weekly random forest small/large, false-small jobs killed and "
           "requeued (classification-idempotent)",
           {"scheduler": "easy", "policy": "fcfs", "classifier": "random-forest", "kill_false_small": True},
           f"{_ZRIGUI}, FCFS-CI; measured: benchmarks/results/classification.md (experiments/zrigui2022.toml, "
           "config ci-fcfs)"),
    Preset("zrigui2022-spf-ci", "EASY-SPF-CI: the same with SPF inside each class and a 48 h starvation "
           "threshold inside each class",
           {"scheduler": "easy", "policy": "spf", "classifier": "random-forest", "kill_false_small": True},
           f"{_ZRIGUI}, SPF-CI; measured: benchmarks/results/classification.md (experiments/zrigui2022.toml, "
           "config ci-spf)",
           options={"class_starvation_threshold": _SPF_48H}),
    Preset("recommended-classification", "the best small/large classification measured: FCFS-CI, each class "
           "by submission time minus a two-week head start per unit of P(small), speculative backfilling of "
           "large jobs, 40 trees with leaves of at least 50 jobs",
           {"scheduler": "easy", "policy": "fcfs", "classifier": "random-forest", "kill_false_small": True},
           "measured: benchmarks/results/classification.md, \"Issue 25's acceptance\" (ten seeds, "
           "experiments/zrigui2022-seeds.toml, config ci-fcfs-head-start2w-speculative-leaf50): cumulative "
           "bsld -59.8 / -70.8 / -60.1 / -73.5% vs EASY on KTH-SP2 / CTC-SP2 / SDSC-SP2 / SDSC-BLUE",
           options={"order_by_probability": "both", "probability_head_start": 1209600, "speculative_backfill": 0,
                    "n_estimators": 40, "min_samples_leaf": 50},
           version=2,
           changes=("v2 (2026-11-27, issue 25): probability_head_start 604800 -> 1209600 (one week -> two): "
                    "+1.8 / +2.3 / +2.5 / -0.2 points of cumulative-bsld reduction on the same ten seeds "
                    "(zrigui2022-seeds.toml, config ci-fcfs-head-start-speculative-leaf50 was v1)",)),
)}


def names() -> list[str]:
    return list(PRESETS)


def get(name: str) -> Preset:
    """The preset called ``name``; a :class:`PresetError` naming the presets (and a close one)."""
    if not isinstance(name, str) or name not in PRESETS:
        close = difflib.get_close_matches(name, list(PRESETS), n=1) if isinstance(name, str) else []
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise PresetError(f"unknown preset {name!r}; {hint}presets: {', '.join(PRESETS)} "
                          "(batsched-ml presets lists what each sets)")
    return PRESETS[name]


def expand(name: str, given: dict) -> dict:
    """``given`` (settings by field name, ``options`` a dict) over the preset's values, key by key:
    a given setting replaces the preset's, a given option replaces that option alone."""
    values = get(name).values()
    options = {**values.pop("options"), **dict(given.get("options") or {})}
    values.update({k: v for k, v in given.items() if k != "options"})
    return {**values, "options": options}
