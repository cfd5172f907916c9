"""E-Loss regression (Gaussier, Glesser, Reis, Trystram, SC'15, sections 4-6).

A degree-2 polynomial model ``f(x) = w . Phi(x)`` over the Table 2 features,
l2-regularised, learned online with NAG (Ross, Mineiro & Langford's Normalized
Adaptive Gradient, robust to arbitrary feature scales) on an asymmetric
weighted loss::

    L = gamma_j * L_over(f - p)    if f >= p   (over-prediction)
        gamma_j * L_under(p - f)   if f <  p   (under-prediction)

with ``L_over, L_under`` in {linear, squared} and ``gamma_j`` one of Table 3's
five weights (20 combinations). The default is the paper's E-Loss, eq. (3):
squared over-prediction, linear under-prediction, ``gamma = log(q * p)``.

Notation: ``q`` = cores requested, ``p`` = actual runtime (known at learning
time; ``weight_time="requested"`` uses the requested time instead), as in the
paper's Table 3 and its reference implementation (predictsim).

Time features: the scheduler only sees job fields, so the time of day / week
of Table 2 is computed from ``job.subtime`` (seconds since the trace start)
plus ``time_offset`` (e.g. the SWF ``UnixStartTime`` + ``TimeZone`` if you know
them); with the default 0 the phases are relative to the trace start.
"""

from __future__ import annotations

import math

import numpy as np

from ..config.params import Params
from ..config.validate import ValidationError, finite, non_negative, positive
from .base import RuntimePredictor

DAY, WEEK = 86400.0, 7 * 86400.0

BASES = ("linear", "squared")
# Table 3 (q = cores, p = runtime); floored at WEIGHT_FLOOR to stay positive.
WEIGHTS = {
    "constant": lambda q, p: 1.0,
    "short-wide": lambda q, p: 5.0 + math.log(q / p),   # 5 + log(q/p)
    "long-narrow": lambda q, p: 5.0 + math.log(p / q),  # 5 + log(p/q)
    "small-area": lambda q, p: 11.0 + math.log(1.0 / (q * p)),
    "large-area": lambda q, p: math.log(q * p),
}
WEIGHT_FLOOR = 1e-3

FEATURES = (
    "requested_time", "last_runtime_1", "last_runtime_2", "last_runtime_3", "ave2", "ave3", "ave_all",
    "cores", "ave_hist_cores", "cores_over_ave_hist", "ave_running_cores", "nb_running",
    "longest_running", "sum_running", "occupied_cores", "break_time",
    "cos_day", "sin_day", "cos_week", "sin_week",
)
_PAIRS = np.triu_indices(len(FEATURES))  # (i, j) of the degree-2 products x_i x_j, i <= j


def basis_loss(kind: str, z):
    """The basis loss of a non-negative error ``z``."""
    return z if kind == "linear" else z * z


def asymmetric_loss(prediction, actual, weight=1.0, over="squared", under="linear"):
    """Gaussier et al.'s weighted asymmetric loss (works on scalars and arrays)."""
    e = np.asarray(prediction, dtype=float) - np.asarray(actual, dtype=float)
    return weight * np.where(e >= 0, basis_loss(over, np.abs(e)), basis_loss(under, np.abs(e)))


def job_weight(gamma: str, cores: float, time: float) -> float:
    q = max(float(cores), 1.0)
    p = max(float(time), 1.0)
    return max(WEIGHTS[gamma](q, p), WEIGHT_FLOOR)


TINY = np.finfo(float).tiny  # the smallest normal float: 1 / TINY is still finite


class NAGRegressor(Params):
    """Linear regression ``f(x) = w . x`` learned online by NAG on the asymmetric loss.

    Algorithm 1 of Ross et al. (2013), per coordinate ``i``: keep the largest
    ``|x_i|`` seen, ``s_i`` (rescaling ``w_i`` by ``(s_old/s_new)^2`` when it grows),
    the running normaliser ``N += sum (x_i / s_i)^2``, the sum of squared
    gradients ``G_i``, and step ``w_i -= eta * sqrt(t / N) * g_i / (s_i sqrt(G_i))``.
    The l2 term ``alpha * ||w||^2`` adds ``2 alpha w_i`` to the gradient.
    """

    def __init__(self, eta: float = 1.0, alpha: float = 0.0, over: str = "squared", under: str = "linear"):
        self.eta = eta
        self.alpha = alpha
        self.over = over
        self.under = under

    def validate_params(self) -> None:
        positive(self.eta, "eta", "NAG learning rate")
        non_negative(self.alpha, "alpha", "l2 regularisation")
        for name in ("over", "under"):
            if getattr(self, name) not in BASES:
                raise ValidationError(f"{name} must be one of {', '.join(BASES)} (basis loss), "
                                      f"got {getattr(self, name)!r}")

    @property
    def fitted(self) -> bool:
        return getattr(self, "coef_", None) is not None

    def _init(self, d: int) -> None:
        self.coef_ = np.zeros(d)
        self.scale_ = np.zeros(d)
        self.sq_grad_ = np.zeros(d)
        self.norm_ = 0.0
        self.t_ = 0
        self._inv_scale = np.zeros(d)
        # step buffer: entries stay 0 until their G_i > 0, and G_i never decreases, so
        # ``np.divide(..., where=G > 0)`` can write into it without clearing it first
        self._step_buf = np.zeros(d)

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        if not self.fitted:
            return np.zeros(X.shape[0]) if X.ndim == 2 else 0.0
        return X @ self.coef_

    def loss_gradient(self, f: float, y: float, weight: float) -> float:
        """dL/df of the weighted asymmetric loss."""
        e = f - y
        if e >= 0:
            return weight * (1.0 if self.over == "linear" else 2.0 * e)
        return weight * (-1.0 if self.under == "linear" else 2.0 * e)

    def partial_fit(self, X, y, sample_weight=None):
        X = np.atleast_2d(np.asarray(X, dtype=float))
        y = np.atleast_1d(np.asarray(y, dtype=float))
        sw = np.ones(len(y)) if sample_weight is None else np.atleast_1d(np.asarray(sample_weight, dtype=float))
        for x, target, weight in zip(X, y, sw):
            self.learn_one(x, float(target), float(weight))
        return self

    def learn_one(self, x, y: float, weight: float = 1.0):
        """One example ``x`` (a 1-d float array): the hot path of online learning."""
        if not self.fitted:
            self.validate_params()
            self._init(len(x))
        self._step(x, y, weight)
        return self

    def fit(self, X, y, sample_weight=None):
        self.coef_ = None
        return self.partial_fit(X, y, sample_weight)

    def _step(self, x, y: float, weight: float) -> None:
        w, s, G = self.coef_, self.scale_, self.sq_grad_
        a = np.abs(x)
        grow = a > s
        if grow.any():
            ratio = s[grow] / a[grow]
            w[grow] *= ratio * ratio
            s[grow] = a[grow]
            # a subnormal scale would overflow 1/s to inf and the normaliser N with it, after
            # which sqrt(t/N) = 0 freezes the model for good: such a coordinate counts as 0
            self._inv_scale = np.divide(1.0, s, out=np.zeros_like(s), where=s >= TINY)
        inv_s = self._inv_scale
        xs = x * inv_s
        self.norm_ += float(xs @ xs)
        self.t_ += 1
        if self.norm_ <= 0:
            return
        grad = self.loss_gradient(float(x @ w), y, weight) * x
        if self.alpha:
            grad += (2.0 * self.alpha) * w
        G += grad * grad
        root = np.sqrt(G)
        step = np.divide(grad * inv_s, root, out=self._step_buf, where=root > 0)
        step *= self.eta * math.sqrt(self.t_ / self.norm_)
        w -= step


class _User:
    __slots__ = ("last", "n", "sum_runtime", "n_sub", "sum_cores", "running", "last_end")

    def __init__(self):
        self.last = []  # last three runtimes, newest first
        self.n = 0
        self.sum_runtime = 0.0
        self.n_sub = 0
        self.sum_cores = 0.0
        self.running = {}  # job -> start time
        self.last_end = None


class ELossRegressor(RuntimePredictor):
    """Online polynomial regression on Table 2 features with Gaussier et al.'s loss family.

    ``over`` / ``under``: basis loss of over-/under-prediction ("linear" or
    "squared"); ``gamma``: weight of Table 3 — "constant" (1), "short-wide"
    (5+log(q/p)), "long-narrow" (5+log(p/q)), "small-area" (11+log(1/(qp))),
    "large-area" (log(qp)); ``eta``: NAG learning rate; ``alpha``: l2
    regularisation; ``degree``: 1 or 2 (polynomial basis
    ``(1, x_i, x_i^2, x_i x_j)``); ``time_offset``: added to ``subtime`` for
    the time-of-day/week features. Defaults = E-Loss, eq. (3).
    """

    name = "eloss"

    def __init__(self, over: str = "squared", under: str = "linear", gamma: str = "large-area",
                 eta: float = 5000.0, alpha: float = 1.0, degree: int = 2, weight_time: str = "runtime",
                 time_offset: float = 0.0):
        self.over = over
        self.under = under
        self.gamma = gamma
        self.eta = eta
        self.alpha = alpha
        self.degree = degree
        self.weight_time = weight_time
        self.time_offset = time_offset

    def validate_params(self) -> None:
        if self.gamma not in WEIGHTS:
            raise ValidationError(f"gamma must be one of {', '.join(sorted(WEIGHTS))} (the weight), "
                                  f"got {self.gamma!r}")
        if isinstance(self.degree, bool) or self.degree not in (1, 2):
            raise ValidationError(f"degree must be 1 or 2 (polynomial basis), got {self.degree!r}")
        if self.weight_time not in ("runtime", "requested"):
            raise ValidationError(f"weight_time must be runtime or requested, got {self.weight_time!r}")
        finite(self.time_offset, "time_offset", "seconds added to subtime")
        NAGRegressor(eta=self.eta, alpha=self.alpha, over=self.over, under=self.under).validate_params()

    @property
    def n_basis(self) -> int:
        n = len(FEATURES)
        return 1 + n + (n * (n + 1) // 2 if self.degree == 2 else 0)

    def reset(self):
        super().reset()
        self.model_ = NAGRegressor(eta=self.eta, alpha=self.alpha, over=self.over, under=self.under)
        self.users_ = {}
        self.pending_ = {}  # job id -> basis vector built at submission
        return self

    # ------------------------------------------------------------ features
    def _user(self, job) -> _User:
        key = job.data.get("user")
        user = self.users_.get(key)
        if user is None:
            user = self.users_[key] = _User()
        return user

    def features(self, job, now: float) -> list:
        """Table 2 features of ``job`` released at ``now`` (before the job itself is recorded)."""
        u = self._user(job)
        last = u.last
        l1 = last[0] if len(last) > 0 else 0.0
        l2 = last[1] if len(last) > 1 else 0.0
        l3 = last[2] if len(last) > 2 else 0.0
        ave2 = sum(last[:2]) / min(len(last), 2) if last else 0.0
        ave3 = sum(last) / len(last) if last else 0.0
        ave_all = u.sum_runtime / u.n if u.n else 0.0
        q = float(job.res)
        ave_hist_q = u.sum_cores / u.n_sub if u.n_sub else 0.0
        ratio_q = q / ave_hist_q if ave_hist_q else 1.0
        running = u.running
        nb_running = len(running)
        if nb_running:
            occupied = float(sum(j.res for j in running))
            ave_run_q = occupied / nb_running
            spans = [now - t for t in running.values()]
            longest, total = max(spans), sum(spans)
        else:
            occupied = ave_run_q = longest = total = 0.0
        brk = now - u.last_end if u.last_end is not None else 0.0
        t = job.subtime + self.time_offset
        day = 2.0 * math.pi * (t % DAY) / DAY
        week = 2.0 * math.pi * (t % WEEK) / WEEK
        requested = job.walltime if job.walltime > 0 else 0.0
        return [requested, l1, l2, l3, ave2, ave3, ave_all, q, ave_hist_q, ratio_q, ave_run_q,
                float(nb_running), longest, total, occupied, brk,
                math.cos(day), math.sin(day), math.cos(week), math.sin(week)]

    def basis(self, features) -> np.ndarray:
        x = np.asarray(features, dtype=float)
        if self.degree == 1:
            return np.concatenate(([1.0], x))
        return np.concatenate(([1.0], x, x[_PAIRS[0]] * x[_PAIRS[1]]))

    # ---------------------------------------------------------- predictor
    def predict(self, job, now: float = 0.0) -> float:
        phi = self.pending_.get(job.id)
        if phi is None:
            phi = self.basis(self.features(job, now))
            self.pending_[job.id] = phi
            u = self._user(job)
            u.n_sub += 1
            u.sum_cores += job.res
        model = self.model_
        return abs(float(phi @ model.coef_)) if model.fitted else 0.0

    def weight(self, job, runtime: float) -> float:
        time = runtime if self.weight_time == "runtime" else job.walltime
        return job_weight(self.gamma, job.res, time)

    def partial_fit(self, job, runtime: float, now: float = 0.0):
        phi = self.pending_.pop(job.id, None)
        if phi is None:  # never predicted: build its features now
            phi = self.basis(self.features(job, job.subtime))
        self.model_.learn_one(phi, float(runtime), self.weight(job, runtime))
        u = self._user(job)
        u.last.insert(0, float(runtime))
        del u.last[3:]
        u.n += 1
        u.sum_runtime += runtime
        return self

    def job_started(self, job, now: float) -> None:
        self._user(job).running[job] = now

    def job_ended(self, job, now: float) -> None:
        u = self._user(job)
        u.running.pop(job, None)
        u.last_end = now
        if job.final_state not in ("COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"):
            self.pending_.pop(job.id, None)
