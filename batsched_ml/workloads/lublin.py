"""The Lublin-Feitelson (2003) rigid-job workload model, and user runtime estimates.

No maintained Python package implements the model (PyPI's ``parallelworkloads``
0.1.3 is an empty placeholder), so this follows the model's published
parameters: the "typeless" (whole-sample) set, which is what the shared
``lublin_256.swf.gz`` was generated with (every job has type 0, 24.9% serial).

- **sizes**: serial with probability ``serial_prob``; otherwise ``log2(size)`` is
  drawn from a two-stage uniform on ``[ulow, umed]`` (probability ``uprob``) or
  ``[umed, uhi]``, rounded to an integer exponent for power-of-two jobs
  (probability ``pow2_prob``); ``uhi = log2(cores)``, ``umed = uhi - 2.5``.
- **runtimes**: ``log(runtime)`` is hyper-gamma, the first gamma's weight
  ``p = pa * size + pb`` (bigger jobs run longer); draws above ``log_max_runtime``
  (e^12 s, about 1.9 days) are redrawn.
- **arrivals**: ``log(inter-arrival)`` is gamma (``aarr * arar``, ``barr``); the
  seconds it spans are "paid" bucket by bucket over 48 half-hour buckets whose
  weights follow a gamma-shaped daily cycle (``anum``, ``bnum``, day starting at
  11:00), so arrivals are dense in working hours and sparse at night.
- **user estimates** (the model has none): Tsafrir et al. (2005) observed that
  estimates are a few round values and that the accuracy ``runtime/estimate`` is
  roughly uniform, with a spike of near-exact estimates. We draw the accuracy
  ``u`` as 1 with probability ``exact_prob``, else uniform on (0, 1]; the
  estimate is ``runtime / u`` rounded up to the next popular value
  (``ESTIMATE_VALUES``), and never below the runtime.

Every draw comes from one ``numpy.random.Generator`` seeded by ``seed``, in a fixed
order, so the same arguments give the same workload byte for byte.
"""

from __future__ import annotations

import math

import numpy as np

from ..config.validate import machine_size
from .swf import SWF_DTYPE, SwfTrace

__all__ = ["DEFAULTS", "ESTIMATE_VALUES", "generate_lublin", "lublin_jobs", "user_estimates"]

BUCKETS = 48
SECONDS_IN_BUCKET = 86400 // BUCKETS
CYCLIC_DAY_START = 11

DEFAULTS = {
    # sizes (uhi/umed default to log2(cores) and log2(cores) - 2.5)
    "serial_prob": 0.244, "pow2_prob": 0.576, "ulow": 0.8, "umed": None, "uhi": None, "uprob": 0.86,
    # runtimes: hyper-gamma of log(runtime)
    "a1": 4.2, "b1": 0.94, "a2": 312.0, "b2": 0.03, "pa": -0.0054, "pb": 0.78, "log_max_runtime": 12.0,
    # arrivals
    "aarr": 10.2303, "barr": 0.4871, "anum": 8.1737, "bnum": 3.9631, "arar": 1.0225, "log_max_arrival": 13.0,
    # user estimates
    "exact_prob": 0.15,
}

# Popular requested times (seconds): minutes, then round hours, up to 36 h.
ESTIMATE_VALUES = np.array([60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 10800, 14400,
                            18000, 21600, 28800, 36000, 43200, 57600, 64800, 86400, 108000, 129600],
                           dtype=np.float64)


def _gamma_redrawn(rng: np.random.Generator, shape: float, scale: float, limit: float, size: int) -> np.ndarray:
    """``size`` gamma draws, each redrawn while above ``limit`` (the model's truncation)."""
    out = rng.gamma(shape, scale, size)
    bad = out > limit
    while bad.any():
        out[bad] = rng.gamma(shape, scale, int(bad.sum()))
        bad = out > limit
    return out


def _bucket_weights(anum: float, bnum: float) -> np.ndarray:
    """Relative arrival intensity of each half-hour bucket (mean 1)."""
    from scipy.stats import gamma

    i = np.arange(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START, dtype=np.float64)
    weights = np.empty(BUCKETS)
    weights[(i.astype(int) - 1) % BUCKETS] = (gamma.cdf(i + 0.5, anum, scale=bnum)
                                               - gamma.cdf(i - 0.5, anum, scale=bnum))
    return weights / weights.mean()


def _arrivals(rng: np.random.Generator, jobs: int, p: dict) -> np.ndarray:
    """Integral arrival times (s): gamma inter-arrivals stretched by the daily cycle."""
    weights = _bucket_weights(p["anum"], p["bnum"])
    # jobs + 1 draws: the model draws the first gap before the first job arrives.
    gaps = np.exp(_gamma_redrawn(rng, p["aarr"] * p["arar"], p["barr"], p["log_max_arrival"], jobs + 1))
    times = np.empty(jobs, dtype=np.float64)
    bucket, points, remainder, now = 0, 0.0, 0.0, 0
    for k, gap in enumerate(gaps.tolist()):
        if k:
            times[k - 1] = now
        if k == jobs:
            break
        points += gap / SECONDS_IN_BUCKET
        advance = 0.0
        while points > weights[bucket]:
            points -= weights[bucket]
            bucket = (bucket + 1) % BUCKETS
            advance += SECONDS_IN_BUCKET
        new_remainder = points / weights[bucket]
        advance += SECONDS_IN_BUCKET * (new_remainder - remainder)
        remainder = new_remainder
        now = int(now + advance)
    return times


def _sizes(rng: np.random.Generator, jobs: int, cores: int, p: dict) -> np.ndarray:
    uhi = math.log2(cores) if p["uhi"] is None else p["uhi"]
    umed = uhi - 2.5 if p["umed"] is None else p["umed"]
    u = rng.random(jobs)
    first = rng.random(jobs) <= p["uprob"]
    low = np.where(first, p["ulow"], umed)
    high = np.where(first, umed, uhi)
    exponent = low + rng.random(jobs) * (high - low)
    pow2 = u <= p["serial_prob"] + p["pow2_prob"]
    exponent = np.where(pow2, np.floor(exponent + 0.5), exponent)
    sizes = np.floor(np.power(2.0, exponent) + 0.5)
    sizes[u <= p["serial_prob"]] = 1
    return np.clip(sizes, 1, cores)


def _runtimes(rng: np.random.Generator, sizes: np.ndarray, p: dict) -> np.ndarray:
    jobs = len(sizes)
    first = rng.random(jobs) <= np.clip(p["pa"] * sizes + p["pb"], 0.0, 1.0)
    log_rt = np.where(first, _gamma_redrawn(rng, p["a1"], p["b1"], p["log_max_runtime"], jobs),
                      _gamma_redrawn(rng, p["a2"], p["b2"], p["log_max_runtime"], jobs))
    return np.floor(np.exp(log_rt))


def user_estimates(runtimes: np.ndarray, rng: np.random.Generator, exact_prob: float = DEFAULTS["exact_prob"],
                   values: np.ndarray = ESTIMATE_VALUES) -> np.ndarray:
    """Requested times for ``runtimes``: runtime / accuracy, rounded up to a popular value."""
    runtimes = np.asarray(runtimes, dtype=np.float64)
    accuracy = np.where(rng.random(len(runtimes)) < exact_prob, 1.0, 1.0 - rng.random(len(runtimes)))
    wanted = runtimes / accuracy
    idx = np.searchsorted(values, wanted, side="left")
    rounded = values[np.minimum(idx, len(values) - 1)]
    return np.maximum(np.where(idx < len(values), rounded, wanted), runtimes)


def lublin_jobs(cores: int, jobs: int, seed: int = 0, **params) -> np.ndarray:
    """The model's jobs as an SWF record array (fields of ``SWF_FIELDS``), in arrival order."""
    machine_size(cores, "cores")  # before anything is built for an impossible machine
    if jobs < 1:
        raise ValueError(f"jobs must be positive, got {jobs}")
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown Lublin model parameters {unknown}; known: {', '.join(DEFAULTS)}")
    p = dict(DEFAULTS, **params)
    rng = np.random.default_rng(seed)
    submit = _arrivals(rng, jobs, p)
    sizes = _sizes(rng, jobs, cores, p)
    runtimes = _runtimes(rng, sizes, p)
    estimates = user_estimates(runtimes, rng, p["exact_prob"])
    table = np.full(jobs, -1.0, dtype=SWF_DTYPE)
    table["job_id"] = np.arange(1, jobs + 1)
    table["submit_time"] = submit
    table["run_time"] = runtimes
    table["allocated_procs"] = sizes
    table["requested_procs"] = sizes
    table["requested_time"] = estimates
    table["status"] = 1
    table["queue_id"] = 0
    return table


def generate_lublin(cores: int, jobs: int, seed: int = 0, **params) -> dict:
    """A Batsim workload dict of ``jobs`` Lublin-model jobs for a ``cores``-core machine.

    ``params`` override ``DEFAULTS``. Walltimes are the generated user estimates.
    """
    from .convert import swf_to_workload

    table = lublin_jobs(cores, jobs, seed, **params)
    header = {"MaxJobs": str(jobs), "MaxNodes": str(cores), "MaxProcs": str(cores)}
    trace = SwfTrace(path=f"lublin_{cores}_seed{seed}.swf", header=header, jobs=table)
    workload, _ = swf_to_workload(trace, nodes=cores)
    workload["generator"] = {"model": "lublin-feitelson-2003", "cores": cores, "jobs": jobs, "seed": seed,
                             "params": {k: v for k, v in sorted(params.items())}}
    return workload
