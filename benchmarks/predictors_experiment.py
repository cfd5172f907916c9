"""AVEbsld (tau = 10 s) of EASY with runtime predictions, beside Gaussier et al. (SC'15) Tables 1, 6, 7.

Needs: the Parallel Workloads Archive files KTH-SP2-1996-2.1-cln.swf.gz, CTC-SP2-1996-3.1-cln.swf.gz,
SDSC-SP2-1998-4.2-cln.swf.gz, SDSC-BLUE-2000-4.2-cln.swf.gz (those asked for) in --traces-dir DIR,
or SWF paths given instead of the trace names.

Usage::

    python benchmarks/predictors_experiment.py [KTH CTC SDSC-SP2 SDSC-BLUE | FILE.swf.gz ...]
        [--traces-dir DIR] [--max-jobs N] [--jobs P] [--json out.json]

Configurations (all EASY, ``--reservations count``):

* EASY: requested times (walltimes);
* EASY clairvoyant: ``--predictor clairvoyant``;
* EASY-SJBF clairvoyant: ``--predictor clairvoyant --backfill-order sjbf``;
* EASY++: ``--predictor ave2 --correction incremental --backfill-order sjbf``;
* E-Loss triple: ``--predictor eloss --correction incremental --backfill-order sjbf``.

``--out DIR`` keeps the jobs CSVs; every row also reports how much of AVEbsld the worst 0.1% / 1%
of jobs carry. ``--jitter S --replicas N`` is a sensitivity probe (submission times + U[0, S) with
seeds 0..N-1). Results and their discussion: ``results/predictors.md``.

``--compat`` adds the same triples built from re-implementations, in this script, of the
paper's own code (predictsim, the pyss fork at github.com/freuk/predictsim; read from the
mirror jad-darrous/predictsim, ``simulation/pyss/src``), to tell apart what comes from the
predictor/correction details and what from the simulator:

* ``EASY++ (predictsim)``: ``predictor_tsafrir`` (requested time until the user has *two*
  finished jobs, integer average) + ``common_correctors.tsafrir`` (the k-th correction sets
  the estimate to ``initial + ladder[k]``, non-cumulative, ladder starting 1 min) + SJBF;
* ``E-Loss triple (predictsim)``: ``predictor_sgdlinear`` with the configuration of the
  paper's selected triple (``sgdlinearIsquareI1IabsI1I0I1logmr``, experiment_dicts.py:
  eta = 5000, l2 lambda = 4e9, quadratic features, weight ``1+log(m*r)``, NAG as in
  ``valopt/algos/nag.py``) + the same tsafrir correction + SJBF;
* ``E-Loss + requested corr. (predictsim)``: the same predictor with the Requested Time
  correction (the triple behind the SDSC-BLUE entry of Table 7, see the results notes).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdata import SHARED, add_data_arguments, reports_missing_data, trace_path  # noqa: E402

from batsched_ml import runner  # noqa: E402
from batsched_ml.analysis import compute_metrics  # noqa: E402
from batsched_ml.plugins import load  # noqa: E402
from batsched_ml.predictors import Estimator  # noqa: E402
from batsched_ml.predictors.base import Correction, RuntimePredictor  # noqa: E402
from batsched_ml.predictors.corrections import RequestedCorrection  # noqa: E402
from batsched_ml.workloads import read_swf, swf_to_workload  # noqa: E402

TRACES = {
    "KTH": "KTH-SP2-1996-2.1-cln.swf.gz",
    "CTC": "CTC-SP2-1996-3.1-cln.swf.gz",
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
}
TRACE_DIR = SHARED / "traces"  # --traces-dir

CONFIGS = {
    "EASY": dict(),
    "EASY clairvoyant": dict(predictor="clairvoyant"),
    "EASY-SJBF clairvoyant": dict(predictor="clairvoyant", backfill_order="sjbf"),
    "EASY++": dict(predictor="ave2", correction="incremental", backfill_order="sjbf"),
    "E-Loss triple": dict(predictor="eloss", correction="incremental", backfill_order="sjbf"),
}
# with --compat (or --config): the triple behind Table 7's SDSC-BLUE entry
EXTRA_CONFIGS = {
    "E-Loss + requested corr.": dict(predictor="eloss", correction="requested", backfill_order="sjbf"),
}

# Gaussier et al.: Table 1 (EASY, clairvoyant), Table 6 (clairvoyant SJBF, EASY++, best E-Loss-family
# SJBF result), Table 7 (cross-validated triple; E-Loss + incremental + SJBF except for one log).
PAPER = {
    "KTH": {"EASY": 92.6, "EASY clairvoyant": 71.7, "EASY-SJBF clairvoyant": 49.8, "EASY++": 63.5,
            "E-Loss triple": 51.4},
    "CTC": {"EASY": 49.6, "EASY clairvoyant": 37.2, "EASY-SJBF clairvoyant": 17.6, "EASY++": 85.8,
            "E-Loss triple": 20.5},
    "SDSC-SP2": {"EASY": 87.9, "EASY clairvoyant": 70.5, "EASY-SJBF clairvoyant": 56.8, "EASY++": 79.4,
                 "E-Loss triple": 75.0},
    "SDSC-BLUE": {"EASY": 36.5, "EASY clairvoyant": 30.6, "EASY-SJBF clairvoyant": 13.2, "EASY++": 21.0,
                  "E-Loss triple": 34.7},
}

# The paper's own simulation results, per exact triple: avgbsld column of
# experiments/data/<log>/sim_analysis/metrics_complete in the predictsim repository (mirror
# dinesh121991/predictsim, a fork of freuk/predictsim). Rows: res_easy_backfill_scheduler_None_None,
# res_easy_prediction_backfill_scheduler_predictorclairvoyant_throw_an_error,
# res_easy_plus_plus_scheduler_predictorclairvoyant_throw_an_error,
# res_easy_plus_plus_scheduler_predictortsafrir_tsafrir,
# res_easy_plus_plus_scheduler_predictorsgdlinearIsquareI1IabsI1I0I1logmr_{tsafrir,reqtime}.
# Table 7's SDSC-BLUE entry (34.7) is the *reqtime* row; with the incremental (tsafrir)
# correction the same predictor gives 12.96 there (its footnote names SDSC-SP2 instead, whose
# 75.0 is the tsafrir row).
PREDICTSIM = {
    "KTH": {"EASY": 92.58, "EASY clairvoyant": 71.72, "EASY-SJBF clairvoyant": 49.85, "EASY++": 63.50,
            "E-Loss triple": 51.44, "E-Loss + requested corr.": 60.26},
    "CTC": {"EASY": 49.57, "EASY clairvoyant": 37.17, "EASY-SJBF clairvoyant": 17.57, "EASY++": 85.77,
            "E-Loss triple": 20.55, "E-Loss + requested corr.": 17.80},
    "SDSC-SP2": {"EASY": 87.87, "EASY clairvoyant": 70.48, "EASY-SJBF clairvoyant": 56.84, "EASY++": 79.40,
                 "E-Loss triple": 74.95, "E-Loss + requested corr.": 72.28},
    "SDSC-BLUE": {"EASY": 36.52, "EASY clairvoyant": 30.62, "EASY-SJBF clairvoyant": 13.18, "EASY++": 20.99,
                  "E-Loss triple": 12.96, "E-Loss + requested corr.": 34.67},
}
# job counts of those runs (predictsim's strong_filter_all_swf on the PWA logs): KTH 28481
# (the uncleaned KTH-SP2-1996-2 log), CTC 77199, SDSC-SP2 54006, SDSC-BLUE 232542.
PREDICTSIM_JOBS = {"KTH": 28481, "CTC": 77199, "SDSC-SP2": 54006, "SDSC-BLUE": 232542}


def reference_name(config: str) -> str:
    """The predictsim triple a configuration corresponds to."""
    return config.replace(" (predictsim)", "")


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


COMPAT_CONFIGS = {
    "EASY++ (predictsim)": (PyssTsafrirAverage, PyssTsafrirCorrection),
    "E-Loss triple (predictsim)": (PyssSgdLinear, PyssTsafrirCorrection),
    "E-Loss + requested corr. (predictsim)": (PyssSgdLinear, RequestedCorrection),
}


def load_trace(name: str, max_jobs: int | None = None, jitter: float = 0.0, replica: int = 0) -> dict:
    """The cleaned trace; with ``jitter`` > 0, every submission time gets a uniform
    ``[0, jitter)`` s offset drawn with seed ``replica`` (a sensitivity probe: sub-second
    perturbations that leave every job's size and runtime unchanged)."""
    workload, _ = swf_to_workload(read_swf(trace_path(name, TRACE_DIR)), max_jobs=max_jobs)
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


def run_one(trace: str, config: str, max_jobs: int | None = None, out: str | None = None,
            jitter: float = 0.0, replica: int = 0, timing: str = "immediate") -> dict:
    workload = load_trace(trace, max_jobs, jitter, replica)
    if config in COMPAT_CONFIGS:
        pred_cls, corr_cls = COMPAT_CONFIGS[config]
        sched = load("schedulers", "easy")(policy="fcfs", reservations="count", backfill_order="sjbf",
                                           estimator=Estimator(pred_cls(), corr_cls(), timing))
    else:
        sched = runner.build_scheduler("easy", reservations="count", correction_timing=timing,
                                       **{**CONFIGS, **EXTRA_CONFIGS}[config])
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
    global TRACE_DIR
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", default=["KTH"], help=f"among {list(TRACES)}, or SWF file paths")
    add_data_arguments(ap)
    ap.add_argument("--max-jobs", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=1, help="parallel simulations")
    ap.add_argument("--json", default=None)
    ap.add_argument("--out", default=None, help="keep the jobs/schedule CSVs in this directory")
    ap.add_argument("--compat", action="store_true",
                    help="also run the predictsim re-implementations (EASY++, E-Loss triple)")
    ap.add_argument("--config", action="append", default=None,
                    help="run only these configurations (repeatable)")
    ap.add_argument("--jitter", type=float, default=0.0, metavar="SECONDS",
                    help="sensitivity probe: add uniform [0, SECONDS) offsets to the submission times")
    ap.add_argument("--replicas", type=int, default=1, help="with --jitter: seeds 0..N-1")
    ap.add_argument("--correction-timing", choices=("immediate", "next-event"), default="immediate",
                    help="when corrections take effect (next-event: as pyss, the paper's simulator)")
    args = ap.parse_args(argv)
    TRACE_DIR = args.traces_dir  # (workers are forked: they see it)
    for t in args.traces:
        trace_path(t, TRACE_DIR)  # every input found before the first (long) run
    known = {**CONFIGS, **EXTRA_CONFIGS, **COMPAT_CONFIGS}
    configs = list(CONFIGS) + (list(EXTRA_CONFIGS) + list(COMPAT_CONFIGS) if args.compat else [])
    if args.config:
        unknown = [c for c in args.config if c not in known]
        if unknown:
            ap.error(f"unknown configuration(s) {unknown}")
        configs = [c for c in configs if c in args.config] + [c for c in args.config if c not in configs]
        if "EASY" not in configs:
            configs.insert(0, "EASY")
    replicas = range(args.replicas) if args.jitter > 0 else [0]
    tasks = [(t, c, r) for t in args.traces for r in replicas for c in configs]
    n = len(tasks)
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(run_one, [t for t, _, _ in tasks], [c for _, c, _ in tasks], [args.max_jobs] * n,
                                 [args.out] * n, [args.jitter] * n, [r for _, _, r in tasks],
                                 [args.correction_timing] * n))
    else:
        rows = []
        for t, c, r in tasks:
            rows.append(run_one(t, c, args.max_jobs, args.out, args.jitter, r, args.correction_timing))
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=2))
    print(f"{'trace':10} {'configuration':38} {'AVEbsld':>9} {'vs EASY':>8} {'paper':>7} {'vs EASY':>8} "
          f"{'predictsim':>10} {'vs EASY':>8} {'MAE':>8} {'under':>6} {'corr':>7} {'wall s':>7}")
    by = {(r["trace"], r["config"], r["replica"]): r for r in rows}
    for r in rows:
        base = by[(r["trace"], "EASY", r["replica"])]["avebsld"]
        ref = reference_name(r["config"])
        paper = PAPER.get(r["trace"], {}).get(ref)
        pbase = PAPER.get(r["trace"], {}).get("EASY")
        psim = PREDICTSIM.get(r["trace"], {}).get(ref)
        sbase = PREDICTSIM.get(r["trace"], {}).get("EASY")
        change = 100 * (r["avebsld"] / base - 1)
        r["vs_easy_pct"] = change
        r["paper"], r["predictsim"] = paper, psim
        pred = "" if paper is None else f"{100 * (paper / pbase - 1):+.0f}%"
        spred = "" if psim is None else f"{100 * (psim / sbase - 1):+.0f}%"
        p = r["prediction"]
        tag = r["config"] if r["replica"] is None else f"{r['config']} r{r['replica']}"
        print(f"{r['trace']:10} {tag:38} {r['avebsld']:9.1f} {change:+7.0f}% "
              f"{'' if paper is None else paper:>7} {pred:>8} {'' if psim is None else psim:>10} {spred:>8} "
              f"{p.get('mae', float('nan')):8.0f} {p.get('under_share', float('nan')):6.2f} "
              f"{p.get('nb_corrections', 0):7d} {r['wall_s']:7.1f} {r['avebsld_wo_top1pct']:9.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
