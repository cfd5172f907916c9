"""Check the compiled release DP against the paper's recursion, batch by batch, in a whole run.

Data: any workload (e.g. ``../shared/golden/KTH-5k.json.gz``) or a generated long queue
(``--long-queue JOBS --cores N``). Runs ``--scheduler probabilistic`` as ``simulate`` does and, for
every batch of candidates a pass evaluates (``ReleaseOutlook.risks``; ``--every K``: one batch in
K), recomputes each risk with Algorithm 2 written out directly: the distribution of released
cores over *every* core count 0..(cores of the running jobs) at every event time, one running
job at a time (``M[n][c] = M[n-1][c] (1 - P_t[n]) + M[n-1][c - c_n] P_t[n]``), D(r) as the mass
in [c_q, c_q + r), its running max over time, then sum_j q_j max_{t_g < T_j} D_g(r). It shares
no code with ``release_kernel`` (no window, no units, no tree, no early exit). Reports the
batches and candidates checked, the largest difference of a fully computed risk, and every
decision (accepted = risk < tau or risk = 0) that differs; exit 1 if any does.

Usage: python benchmarks/release_dp_check.py -w WORKLOAD -p PLATFORM --distribution hmm [-o tau=0]
       python benchmarks/release_dp_check.py --long-queue 3000 --cores 8192 --distribution user
       [--every 1] [--max-work 3e8] [scheduler flags as simulate's]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from batsched_ml import cli
from batsched_ml.scheduling import probabilistic
from batsched_ml.scheduling.release_dp import ReleaseOutlook
from batsched_ml.workloads.platform import write_platform


def textbook_risks(times, jobs, cum, cores, missing, sizes, q, ends) -> np.ndarray:
    """Algorithm 2 over every core count (the paper's recursion, vectorised over event times)."""
    times, jobs, cum = np.asarray(times, float), np.asarray(jobs, int), np.asarray(cum, float)
    distinct = np.unique(times)
    prob = np.zeros((len(cores), len(distinct)))  # P(job i ended by distinct time g)
    prob[jobs, distinct.searchsorted(times)] = cum
    prob = np.maximum.accumulate(prob, axis=1) if prob.size else prob
    total = int(sum(cores))
    pmf = np.zeros((len(distinct), total + 1))
    pmf[:, 0] = 1.0
    for i, c in enumerate(int(c) for c in cores):
        p = prob[i][:, None]
        shifted = np.zeros_like(pmf)
        shifted[:, c:] = pmf[:, :total + 1 - c]
        pmf = pmf * (1.0 - p) + shifted * p
    risks = []
    for size, q_row, end_row in zip(sizes, np.asarray(q), np.asarray(ends)):
        d = pmf[:, missing:missing + int(size)].sum(axis=1)  # P(c_q <= released < c_q + r)
        runmax = np.concatenate(([0.0], np.maximum.accumulate(d)))  # row k: max over times before k
        risks.append(float(np.dot(q_row, runmax[distinct.searchsorted(end_row, side="left")])))
    return np.array(risks)


class Recorder:
    """Wraps ``ReleaseOutlook`` (and its shortcut for point masses, ``point_mass_risks``) so that
    every batch is also computed by ``textbook_risks``."""

    def __init__(self, every: int, max_work: float):
        self.every, self.max_work = every, max_work
        self.batches = self.checked = self.candidates = self.skipped = 0
        self.max_diff = 0.0
        self.disagreements: list = []

    def install(self, patch=setattr) -> None:
        """Patch ``ReleaseOutlook`` (``patch``: e.g. pytest's ``monkeypatch.setattr``, undone after)."""
        recorder, init, risks = self, ReleaseOutlook.__init__, ReleaseOutlook.risks

        def keep_inputs(outlook, times, jobs, cum, cores, missing, sizes):
            outlook.check_inputs = (np.array(times, float), np.array(jobs, int), np.array(cum, float),
                                    np.array(cores, int), int(missing))
            init(outlook, times, jobs, cum, cores, missing, sizes)

        def checked_risks(outlook, sizes, q, ends, tau=None):
            got = risks(outlook, sizes, q, ends, tau)
            recorder.compare(outlook.check_inputs, sizes, q, ends, tau, got)
            return got

        def checked_point_masses(times, jobs, cores, missing, sizes, q, ends):  # the DP's shortcut
            got = point_masses(times, jobs, cores, missing, sizes, q, ends)
            inputs = (np.array(times, float), np.array(jobs, int), np.ones(len(times)), np.array(cores, int),
                      int(missing))
            recorder.compare(inputs, sizes, q, ends, None, got)
            return got

        point_masses = probabilistic.point_mass_risks
        patch(ReleaseOutlook, "__init__", keep_inputs)
        patch(ReleaseOutlook, "risks", checked_risks)
        patch(probabilistic, "point_mass_risks", checked_point_masses)

    def compare(self, inputs, sizes, q, ends, tau, got) -> None:
        self.batches += 1
        if (self.batches - 1) % self.every:
            return
        times, jobs, cum, cores, missing = inputs
        if len(np.unique(times)) * (int(cores.sum()) + 1) * len(cores) > self.max_work:
            self.skipped += 1
            return
        want = textbook_risks(times, jobs, cum, cores, missing, sizes, q, ends)
        self.checked += 1
        self.candidates += len(want)
        tau = -1.0 if tau is None else tau
        accept_got = (got < tau) | (got == 0.0)
        accept_want = (want < tau) | (want == 0.0)
        exact = accept_got | (tau < 0)  # refused early: ``got`` is a lower bound that reached tau
        if exact.any():
            self.max_diff = max(self.max_diff, float(np.abs(got[exact] - want[exact]).max()))
        for k in np.flatnonzero(accept_got != accept_want):
            self.disagreements.append((self.batches, int(sizes[k]), float(got[k]), float(want[k])))

    def report(self) -> dict:
        return {"batches": self.batches, "checked": self.checked, "skipped_too_large": self.skipped,
                "candidates": self.candidates, "max_abs_diff": self.max_diff,
                "decisions_differing": len(self.disagreements), "first_differing": self.disagreements[:5]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-w", "--workload")
    parser.add_argument("-p", "--platform")
    parser.add_argument("--long-queue", type=int, metavar="JOBS", help="bench_long_queue's generated workload")
    parser.add_argument("--cores", type=int, default=8192)
    parser.add_argument("--load", type=float, default=2.0)
    parser.add_argument("--prefix", help="keep the run's outputs at PREFIX_jobs.csv... (default: discarded)")
    parser.add_argument("--every", type=int, default=1, help="check one batch in K")
    parser.add_argument("--max-work", type=float, default=3e8,
                        help="skip batches whose recursion exceeds times x counts x jobs")
    args, flags = parser.parse_known_args(argv)
    recorder = Recorder(args.every, args.max_work)
    recorder.install()
    with tempfile.TemporaryDirectory() as tmp:
        workload, platform = args.workload, args.platform
        if args.long_queue:
            from bench_long_queue import long_queue_workload
            workload = str(Path(tmp) / "long-queue.json")
            Path(workload).write_text(json.dumps(long_queue_workload(args.long_queue, args.cores, args.load, 0)))
            platform = str(Path(tmp) / "platform.xml")
            write_platform(args.cores, platform)
        with contextlib.redirect_stdout(io.StringIO()):  # the run's metrics: not this check's subject
            status = cli.main(["simulate", "-w", workload, "-p", platform, "-e", args.prefix or f"{tmp}/run", "--quiet",
                               "--scheduler", "probabilistic", *flags])
    print(json.dumps(recorder.report()))
    return status or (1 if recorder.disagreements else 0)


if __name__ == "__main__":
    sys.exit(main())
