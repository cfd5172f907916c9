"""Probes of Gaussier et al. (SC'15) that a campaign file cannot express. The paper's tables
themselves (EASY, clairvoyant, EASY++, the E-Loss triples on four traces) are a campaign::

    batsched-ml campaign run experiments/gaussier2015.toml

This script reads that file (traces, configurations, the paper's numbers) and adds:

* ``--compat``: the same triples built from re-implementations, in this script, of the paper's
  own code (predictsim, the pyss fork at github.com/freuk/predictsim; read from the mirror
  jad-darrous/predictsim, ``simulation/pyss/src``), to tell apart what comes from the
  predictor/correction details and what from the simulator:

  * ``easy++ (predictsim)``: ``predictor_tsafrir`` (requested time until the user has *two*
    finished jobs, integer average) + ``common_correctors.tsafrir`` (the k-th correction sets
    the estimate to ``initial + ladder[k]``, non-cumulative, ladder starting 1 min) + SJBF;
  * ``eloss-triple (predictsim)``: ``predictor_sgdlinear`` with the configuration of the
    paper's selected triple (``sgdlinearIsquareI1IabsI1I0I1logmr``, experiment_dicts.py:
    eta = 5000, l2 lambda = 4e9, quadratic features, weight ``1+log(m*r)``, NAG as in
    ``valopt/algos/nag.py``) + the same tsafrir correction + SJBF;
  * ``eloss-requested (predictsim)``: the same predictor with the Requested Time correction.

* ``--jitter S --replicas N``: a sensitivity probe (submission times + U[0, S) with seeds 0..N-1).

Every row also reports how much of AVEbsld the worst 0.1% / 1% of jobs carry. Runs go through
the campaign executor (``--workers``). Results and their discussion: ``results/predictors.md``.

    python benchmarks/predictors_experiment.py [KTH-SP2 CTC-SP2 SDSC-SP2 SDSC-BLUE] [--compat]
        [--config NAME ...] [--jitter S --replicas N] [--max-jobs N] [--workers P] [--json out.json]
        [--traces-dir DIR]

Needs: the four traces of experiments/gaussier2015.toml from the Parallel Workloads Archive
(KTH-SP2-1996-2.1-cln, CTC-SP2-1996-3.1-cln, SDSC-SP2-1998-4.2-cln, SDSC-BLUE-2000-4.2-cln .swf.gz)
where that file points (../shared/traces) or in --traces-dir DIR.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import add_data_arguments, campaign_file, reports_missing_data  # noqa: E402

from batsched_ml import runner  # noqa: E402
from batsched_ml.analysis import compute_metrics  # noqa: E402
from batsched_ml.campaign.spec import load_campaign  # noqa: E402
from batsched_ml.config.compose import build_scheduler  # noqa: E402
from batsched_ml.config.plugins import load  # noqa: E402
from batsched_ml.executor import map_tasks  # noqa: E402
from batsched_ml.predictors import Estimator  # noqa: E402
from batsched_ml.predictors.base import Correction, RuntimePredictor  # noqa: E402
from batsched_ml.predictors.corrections import RequestedCorrection  # noqa: E402
from batsched_ml.workloads import read_swf, swf_to_workload  # noqa: E402

CAMPAIGN = ROOT / "experiments" / "gaussier2015.toml"


def use_traces_dir(traces_dir) -> None:
    """Check the campaign's traces (in ``traces_dir``) and use them from now on (this process and
    the executor's workers: ``campaign_file`` puts the directory in the environment)."""
    campaign_file(CAMPAIGN, traces_dir)


def campaign():
    return load_campaign(CAMPAIGN)


def build(config: str, timing: str = "immediate"):
    """The scheduler of a gaussier2015.toml config, with the given correction timing."""
    run_config = campaign().configs[config].config
    if run_config.correction is not None:  # (the timing of corrections: only with one)
        run_config = run_config.replace(correction_timing=timing)
    return build_scheduler(run_config)


def paper_values() -> dict:
    """(trace, config) -> the paper's AVEbsld, from the campaign's [[paper]] table (first source)."""
    out: dict = {}
    for ref in campaign().paper:
        if ref.metric == "avebsld10" and ref.value is not None:
            out.setdefault((ref.trace, ref.config), ref.value)
    return out


# ----------------------------------------------------------------------------------------------
# predictsim (pyss fork) re-implementations, for --compat. Not library code: they reproduce the
# reference code's quirks on purpose.

class PyssTsafrirAverage(RuntimePredictor):
    """``predictors/predictor_tsafrir.py``: min(requested, int((last + previous) / 2)) once the
    user has two finished jobs, the requested time before."""

    name = "ave2-predictsim"

    def reset(self):
        self.last_ = {}
        return self

    def predict(self, job, now=0.0):
        hist = self.last_.get(job.data.get("user"))
        if not hist or len(hist) < 2:
            return job.walltime
        return min(job.walltime, float(int((hist[0] + hist[1]) / 2)))

    def partial_fit(self, job, runtime, now=0.0):
        hist = self.last_.setdefault(job.data.get("user"), [])
        hist.insert(0, float(int(runtime)))
        del hist[2:]
        return self


PYSS_LADDER = (0, 60, 300, 900, 1800, 3600, 7200, 18000, 36000, 72000, 180000, 360000)


class PyssTsafrirCorrection(Correction):
    """``schedulers/common_correctors.py:tsafrir``: the k-th correction makes the estimate
    ``initial + ladder[k]`` (it replaces the previous increment instead of adding to it)."""

    name = "incremental-predictsim"

    def correct(self, job, now):
        k = job.info.get("pyss_corrections", 0)
        if k + 1 >= len(PYSS_LADDER):
            return job.walltime
        job.info["pyss_corrections"] = k + 1
        return job.estimate - PYSS_LADDER[k] + PYSS_LADDER[k + 1]


class PyssSgdLinear(RuntimePredictor):
    """``predictors/predictor_sgdlinear.py`` with the configuration of the paper's selected
    triple (experiment_dicts.py): composite loss, squared (slope 1) over-prediction, linear
    (slope 1) under-prediction, threshold 0, weight ``1 + log(m * r)``, quadratic features,
    l2 regularisation lambda = 4e9, NAG (``valopt/algos/nag.py``) with eta = 5000.

    The 19 base features (x[0] = 1) and the quadratic expansion (pairwise products of
    x[1..16], squares of x[1..18]) follow ``make_x``, quirks included (e.g. a past job's
    runtime becomes "now - its submission" once it ended). Predictions are
    ``min(requested, int(max(1, int(|w.x|))))``.
    """

    name = "eloss-predictsim"

    def __init__(self, eta=5000.0, lam=4e9, over_slope=1.0, under_slope=1.0, threshold=0.0):
        self.eta = eta
        self.lam = lam
        self.over_slope = over_slope
        self.under_slope = under_slope
        self.threshold = threshold
        iu = np.triu_indices(16, k=1)  # itertools.combinations(x[1:17], 2), same order
        self._i0, self._i1 = iu[0] + 1, iu[1] + 1
        super().__init__()

    def reset(self):
        d = 19 + 120 + 18
        self.w_ = np.zeros(d)
        self.s_ = np.full(d, 1e-9)
        self.G_ = np.full(d, 1e-9)
        self.N_ = 1e-9
        self.n_ = 1.0
        self.users_ = {}
        self.x_ = {}
        return self

    def _user(self, job):
        key = job.data.get("user")
        u = self.users_.get(key)
        if u is None:
            # last three finished jobs (subtime, runtime), n, sum runtimes, sum cores, last end, running
            u = self.users_[key] = {"last": [], "n": 0, "sr": 0.0, "sc": 0.0, "end": 0.0, "running": {}}
        return u

    def _features(self, job, now):
        u = self._user(job)
        req = float(job.walltime)
        x = [0.0] * 19
        x[0] = 1.0
        for i in range(3):
            if i < len(u["last"]):
                sub, run = u["last"][i]
                last = run if sub + run > now else now - sub
            else:
                last = req
            x[1 + i] = float(min(req, last))
        x[4] = req
        n_last = len(u["last"])
        if n_last >= 3:
            x[6] = 0.33 * (x[1] + x[2] + x[3])
            x[5] = 0.5 * (x[1] + x[2])
        elif n_last == 2:
            x[5] = x[6] = 0.5 * (x[1] + x[2])
        elif n_last == 1:
            x[5] = x[6] = x[1]
        else:
            x[5] = x[6] = req
        x[7] = u["sr"] / u["n"] if u["n"] else 0.0
        x[8] = now - u["end"] if u["end"] != 0.0 else 0.0
        x[9] = job.res / (u["sc"] / u["n"]) if u["n"] else 0.0
        running = u["running"]
        lengths = [now - t for t in running.values()]
        x[10] = float(sum(j.res for j in running))
        x[11] = float(sum(lengths))
        x[12] = float(len(running))
        x[13] = float(max(lengths)) if lengths else 0.0
        t = job.subtime
        day = 2.0 * math.pi * (t % 86400) / 86400.0
        week = 2.0 * math.pi * (t % 604800) / 604800.0
        x[14], x[15], x[16], x[17] = math.cos(day), math.sin(day), math.cos(week), math.sin(week)
        x[18] = float(job.res)
        a = np.asarray(x)
        return np.concatenate((a, a[self._i0] * a[self._i1], a[1:19] ** 2))

    def predict(self, job, now=0.0):
        x = self.x_.get(job.id)
        if x is None:
            x = self.x_[job.id] = self._features(job, now)
        f = abs(float(self.w_ @ x))
        return float(min(int(max(1.0, int(f))), job.walltime))

    def partial_fit(self, job, runtime, now=0.0):
        x = self.x_.pop(job.id, None)
        if x is None:
            x = self._features(job, job.subtime)
        u = self._user(job)
        run = float(int(runtime))
        u["last"].insert(0, (job.subtime, run))
        del u["last"][3:]
        u["n"] += 1
        u["sr"] += run
        u["sc"] += job.res
        u["end"] = now
        weight = 1.0 + math.log(max(job.res, 1) * max(run, 1.0))
        w, s = self.w_, self.s_
        ax = np.abs(x)
        grow = ax > s
        if grow.any():
            w[grow] *= s[grow] / ax[grow]
            s[grow] = ax[grow]
        self.N_ += float(np.sum((x / s) ** 2))
        e = float(w @ x) - run
        if e > self.threshold:
            g = weight * self.over_slope * 2.0 * (e - self.threshold) * x
        elif e == self.threshold:
            g = np.zeros_like(x)
        else:
            g = -weight * self.under_slope * x
        g = g + self.lam * w
        self.G_ += g * g
        self.w_ = w - self.eta * g / (np.sqrt(self.N_ * self.G_ / self.n_) * s)
        self.n_ += 2.0
        return self

    def job_started(self, job, now):
        self._user(job)["running"][job] = now

    def job_ended(self, job, now):
        self._user(job)["running"].pop(job, None)


# compat config -> (predictor, correction, the campaign config it re-implements)
COMPAT_CONFIGS = {
    "easy++ (predictsim)": (PyssTsafrirAverage, PyssTsafrirCorrection, "easy++"),
    "eloss-triple (predictsim)": (PyssSgdLinear, PyssTsafrirCorrection, "eloss-triple"),
    "eloss-requested (predictsim)": (PyssSgdLinear, RequestedCorrection, "eloss-requested"),
}



def load_trace(name: str, max_jobs: int | None = None, jitter: float = 0.0, replica: int = 0) -> dict:
    """The cleaned trace of the campaign; with ``jitter`` > 0, every submission time gets a uniform
    ``[0, jitter)`` s offset drawn with seed ``replica`` (a sensitivity probe: sub-second
    perturbations that leave every job's size and runtime unchanged)."""
    workload, _ = swf_to_workload(read_swf(campaign().traces[name].path), max_jobs=max_jobs)
    if jitter > 0:
        rng = np.random.default_rng(replica)
        for job, offset in zip(workload["jobs"], rng.uniform(0.0, jitter, len(workload["jobs"]))):
            job["subtime"] = job["subtime"] + float(offset)
        workload["jobs"].sort(key=lambda j: j["subtime"])
    return workload


def tail_metrics(jobs_csv) -> dict:
    """How much of AVEbsld (tau = 10 s) the worst jobs carry."""
    from batsched_ml.analysis.metrics import merge_attempts, per_job_bsld, read_jobs_csv

    b = per_job_bsld(merge_attempts(read_jobs_csv(jobs_csv)), 10.0)
    b = np.sort(b[~np.isnan(b)])[::-1]
    n, total = len(b), float(b.sum())
    out = {"max_bsld": float(b[0])}
    for frac, tag in ((0.001, "0.1pct"), (0.01, "1pct")):
        k = max(1, int(round(frac * n)))
        out[f"top{tag}_share"] = float(b[:k].sum()) / total
        out[f"avebsld_wo_top{tag}"] = float(b[k:].sum()) / n
    return out


def run_one(task: tuple) -> dict:
    """One simulation: ``(trace, config, max_jobs, out, jitter, replica, timing)``."""
    trace, config, max_jobs, out, jitter, replica, timing = task
    workload = load_trace(trace, max_jobs, jitter, replica)
    if config in COMPAT_CONFIGS:
        pred_cls, corr_cls, _ = COMPAT_CONFIGS[config]
        sched = load("schedulers", "easy")(policy="fcfs", reservations="count", backfill_order="sjbf",
                                           estimator=Estimator(pred_cls(), corr_cls(), timing))
    else:
        sched = build(config, timing)
    with tempfile.TemporaryDirectory() as tmp:
        if out is not None:
            slug = "".join(ch if ch.isalnum() or ch in "+-" else "_" for ch in config)
            prefix = Path(out) / (f"{trace}-{slug}" + (f"-r{replica}" if jitter > 0 else ""))
        else:
            prefix = Path(tmp) / "run"
        t0 = time.perf_counter()
        result, _ = runner.simulate(int(workload["nb_res"]), workload, sched, prefix=prefix)
        wall = time.perf_counter() - t0
        metrics = compute_metrics(result.jobs_csv)
        tails = tail_metrics(result.jobs_csv)
    report = sched.report().get("predictions", {})
    return {"trace": trace, "config": config, "replica": replica if jitter > 0 else None, "jitter_s": jitter,
            "correction_timing": timing,
            "nb_jobs": len(workload["jobs"]), "avebsld": metrics["avebsld_tau10"], "wall_s": wall, **tails,
            "prediction": {k: v for k, v in report.items() if not k.startswith("ecdf")}}


@reports_missing_data
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", default=["KTH-SP2"], help="traces of experiments/gaussier2015.toml")
    add_data_arguments(ap)
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--workers", type=int, default=1, help="parallel simulations (0: in this process)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--out", default=None, help="keep the jobs/schedule CSVs in this directory")
    ap.add_argument("--compat", action="store_true", help="run the predictsim re-implementations")
    ap.add_argument("--config", action="append", default=None,
                    help="campaign configs to run beside them (repeatable; default easy)")
    ap.add_argument("--jitter", type=float, default=0.0, metavar="SECONDS",
                    help="sensitivity probe: add uniform [0, SECONDS) offsets to the submission times")
    ap.add_argument("--replicas", type=int, default=1, help="with --jitter: seeds 0..N-1")
    ap.add_argument("--correction-timing", choices=("immediate", "next-event"), default="immediate",
                    help="when corrections take effect (next-event: as pyss, the paper's simulator)")
    args = ap.parse_args(argv)
    use_traces_dir(args.traces_dir)
    c = campaign()
    for t in args.traces:
        if t not in c.traces:
            ap.error(f"unknown trace {t!r}; choose from {list(c.traces)}")
    configs = list(dict.fromkeys(["easy"] + (args.config or [])))
    for name in configs:
        if name not in c.configs:
            ap.error(f"unknown configuration {name!r}; choose from {list(c.configs)}")
    configs += list(COMPAT_CONFIGS) if args.compat else []
    replicas = range(args.replicas) if args.jitter > 0 else [0]
    tasks = [(t, cfg, args.max_jobs, args.out, args.jitter, r, args.correction_timing)
             for t in args.traces for r in replicas for cfg in configs]
    rows = map_tasks(run_one, tasks, workers=args.workers)
    paper = paper_values()
    print(f"{'trace':10} {'configuration':30} {'AVEbsld':>9} {'vs EASY':>8} {'paper':>7} {'vs EASY':>8} "
          f"{'MAE':>8} {'under':>6} {'corr':>7} {'wall s':>7} {'w/o 1%':>9}")
    by = {(r["trace"], r["config"], r["replica"]): r for r in rows}
    for r in rows:
        base = by[(r["trace"], "easy", r["replica"])]["avebsld"]
        ref = COMPAT_CONFIGS[r["config"]][2] if r["config"] in COMPAT_CONFIGS else r["config"]
        ref_value, ref_base = paper.get((r["trace"], ref)), paper.get((r["trace"], "easy"))
        r["vs_easy_pct"] = 100 * (r["avebsld"] / base - 1)
        r["paper"] = ref_value
        pchange = "" if ref_value is None or not ref_base else f"{100 * (ref_value / ref_base - 1):+.0f}%"
        p = r["prediction"]
        tag = r["config"] if r["replica"] is None else f"{r['config']} r{r['replica']}"
        print(f"{r['trace']:10} {tag:30} {r['avebsld']:9.1f} {r['vs_easy_pct']:+7.0f}% "
              f"{'' if ref_value is None else ref_value:>7} {pchange:>8} "
              f"{p.get('mae', float('nan')):8.0f} {p.get('under_share', float('nan')):6.2f} "
              f"{p.get('nb_corrections', 0):7d} {r['wall_s']:7.1f} {r['avebsld_wo_top1pct']:9.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
