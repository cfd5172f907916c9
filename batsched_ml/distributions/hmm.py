"""The paper's runtime-distribution model: a hidden Markov model over 15-minute slices.

Jobs are grouped by the 15-minute slice of their submission and each slice gets
a histogram of the runtime bins of its jobs (filled as they complete). Once
``warmup`` (a week) of history exists, ``n_states`` (16) representative
distributions are learned by clustering the slice histograms (scikit-learn's
k-means, weighted by the slice's number of jobs, ``iterations`` = 3 rounds: the
paper warns that more over-fit); each state's distribution is the pooled
histogram of its slices, smoothed by ``smoothing`` pseudo-jobs of the overall
distribution. Transitions (self-loops included) are counted on the slice
sequence (a slice without jobs keeps the previous state), with add-one
smoothing. Every ``check_every`` seconds the model is re-learned on all the data
when ``KS distance(model, data) * sqrt(number of jobs)`` passes
``relearn_threshold`` (the paper's criterion, with the Kolmogorov-Smirnov
distance between the pooled runtime distributions as "distance").

Online forward filtering: a completion is an observation of its *submission*
slice, so the last ``filter_window`` slices are re-filtered when late completions
arrive; older slices are folded into a frozen prior. A new job's distribution is
the mixture of the states under the current slice's posterior (``mode="mixture"``)
or the most likely state's (``mode="map"``). Before the first model: no history.
"""

from __future__ import annotations

import math

import numpy as np

from ..config.validate import ValidationError, non_negative, positive, positive_int
from ..incremental import JournaledDict
from .base import RuntimeDistribution
from .bins import DEFAULT_FACTOR, DEFAULT_MAX_RUNTIME

MODES = ("mixture", "map")


class HMMDistribution(RuntimeDistribution):
    name = "hmm"

    def __init__(self, n_states: int = 16, slice_length: float = 900.0, warmup: float = 604800.0,
                 iterations: int = 3, relearn_threshold: float = 3.0, check_every: float = 86400.0,
                 smoothing: float = 1.0, filter_window: int = 96, mode: str = "mixture", random_state: int = 0,
                 bin_factor: float = DEFAULT_FACTOR, max_runtime: float = DEFAULT_MAX_RUNTIME):
        self.n_states = n_states
        self.slice_length = slice_length
        self.warmup = warmup
        self.iterations = iterations
        self.relearn_threshold = relearn_threshold
        self.check_every = check_every
        self.smoothing = smoothing
        self.filter_window = filter_window
        self.mode = mode
        self.random_state = random_state
        super().__init__(bin_factor, max_runtime)

    def validate_params(self) -> None:
        super().validate_params()
        if self.mode not in MODES:
            raise ValidationError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name in ("n_states", "iterations", "filter_window"):
            positive_int(getattr(self, name), name)
        positive(self.slice_length, "slice_length", "seconds per submission slice")
        positive(self.check_every, "check_every", "seconds between relearning checks")
        for name in ("warmup", "relearn_threshold", "smoothing"):
            non_negative(getattr(self, name), name)

    def reset(self):
        super().reset()
        # submission slice -> histogram of the completed jobs' runtime bins (journaled: a snapshot
        # writes the slices that changed since the previous one)
        self.counts_ = JournaledDict()
        self.pooled_ = np.zeros(self.n_bins)
        self.first_ = None  # first submission time seen
        self.next_check_ = None
        self.centers_ = None  # (states, bins) distributions
        self.log_centers_ = None
        self.trans_ = None
        self.start_prob_ = None
        self.model_pooled_ = None
        self.relearns_ = []  # (time, jobs, statistic)
        self._frozen = None  # (slice, posterior) filtered up to that slice, inclusive
        self._alphas = []  # filtered posteriors of the slices after the frozen one, in order
        self._dirty = None  # earliest slice whose observations changed since it was filtered
        self._emissions = {}  # slice -> likelihood of its histogram under each state (up to a factor)
        return self

    # ------------------------------------------------------------ learning
    def partial_fit(self, job, runtime: float, now: float = 0.0):
        s = int(job.submission_time // self.slice_length)
        b = int(self.bins_.index(float(runtime)))
        row = self.counts_.get(s)
        if row is None:
            row = self.counts_[s] = np.zeros(self.n_bins)
        else:
            self.counts_.touch(s)
        row[b] += 1
        self._emissions.pop(s, None)
        self.pooled_[b] += 1
        if self._dirty is None or s < self._dirty:
            self._dirty = s
        self._maybe_learn(now)
        return self

    def _maybe_learn(self, now: float) -> None:
        if self.first_ is None or now - self.first_ < self.warmup:
            return
        if self.next_check_ is not None and now < self.next_check_:
            return
        self.next_check_ = now + self.check_every
        n = self.pooled_.sum()
        if self.centers_ is not None:
            cdf_data = np.cumsum(self.pooled_) / n
            cdf_model = np.cumsum(self.model_pooled_)
            stat = float(np.abs(cdf_data - cdf_model).max() * math.sqrt(n))
            if stat <= self.relearn_threshold:
                return
        else:
            stat = None
        self._learn()
        self.relearns_.append((now, int(n), stat))

    def _learn(self) -> None:
        from sklearn.cluster import KMeans
        from threadpoolctl import threadpool_limits  # a scikit-learn dependency

        slices = np.array(sorted(self.counts_))
        counts = np.array([self.counts_[s] for s in slices])
        sizes = counts.sum(axis=1)
        hist = counts / sizes[:, None]
        k = _distinct_rows(hist, self.n_states)
        km = KMeans(n_clusters=k, n_init=1, max_iter=self.iterations, random_state=self.random_state,
                    init="k-means++", tol=0.0)
        # one thread: a few milliseconds of work, which OpenMP's and OpenBLAS's idle threads would
        # spin on for far longer (CPU time), and the same labels whatever the machine's cores
        with threadpool_limits(limits=1):
            labels = km.fit_predict(hist, sample_weight=sizes)
        pooled = self.pooled_ / self.pooled_.sum()
        centers = np.zeros((k, self.n_bins))
        np.add.at(centers, labels, counts)
        centers = (centers + self.smoothing * pooled) / (centers.sum(axis=1, keepdims=True) + self.smoothing)
        # every slice from the first to the last: empty slices keep the previous state
        full = np.full(slices[-1] - slices[0] + 1, -1)
        full[slices - slices[0]] = labels
        for i in range(1, len(full)):
            if full[i] < 0:
                full[i] = full[i - 1]
        trans = np.ones((k, k))
        np.add.at(trans, (full[:-1], full[1:]), 1.0)
        self.trans_ = trans / trans.sum(axis=1, keepdims=True)
        occupancy = np.bincount(labels, weights=sizes, minlength=k)
        self.start_prob_ = (np.bincount(full, minlength=k) + 1.0) / (len(full) + k)
        self.centers_ = centers
        self.log_centers_ = np.log(np.maximum(centers, 1e-300))  # bins never seen: impossible, finitely
        self.model_pooled_ = (occupancy / occupancy.sum()) @ centers
        self._frozen = None
        self._alphas = []
        self._dirty = None
        self._emissions = {}

    def __getstate__(self) -> dict:
        """Without the slices' likelihoods: a cache, recomputed as needed (a snapshot stays small)."""
        state = dict(self.__dict__)
        state.pop("_emissions", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "counts_" in state:
            self._emissions = {}

    # ----------------------------------------------------------- filtering
    def _step(self, prior: np.ndarray, s: int) -> np.ndarray:
        pred = prior.dot(self.trans_)  # as ``@`` (the same BLAS product), a third of its call cost
        like = self._emissions.get(s)
        if like is None:
            row = self.counts_.get(s)
            if row is None:
                return pred
            loglik = self.log_centers_ @ row
            like = self._emissions[s] = np.exp(loglik - loglik.max())
        post = np.multiply(pred, like, out=pred)
        post /= np.add.reduce(post)  # ndarray.sum's own reduction, without its Python wrapper
        return post

    def posterior(self, now: float) -> np.ndarray | None:
        """P(state of the current slice | every completion seen so far)."""
        if self.centers_ is None:
            return None
        cur = int(now // self.slice_length)
        alphas = self._alphas
        if self._frozen is None:
            self._frozen = (cur - self.filter_window, self.start_prob_)
        s, alpha = self._frozen
        if self._dirty is not None:  # late completions: re-filter from their slice on
            del alphas[max(self._dirty - s - 1, 0):]
            self._dirty = None
        while s < cur - self.filter_window:  # slices leaving the window fold into the frozen prior
            s += 1
            alpha = alphas.pop(0) if alphas else self._step(alpha, s)
        self._frozen = (s, alpha)
        if alphas:
            alpha = alphas[-1]
        for t in range(s + len(alphas) + 1, cur + 1):
            alpha = self._step(alpha, t)
            alphas.append(alpha)
        return alpha

    def predict_proba(self, jobs, now: float = 0.0) -> np.ndarray:
        if self.first_ is None:
            self.first_ = now
        out = np.zeros((len(jobs), self.n_bins))
        post = self.posterior(now)
        if post is None:
            return out
        if self.mode == "map":
            out[:] = self.centers_[int(np.argmax(post))]
        else:
            out[:] = post @ self.centers_
        return out

    def report(self) -> dict:
        return {"relearns": len(self.relearns_), "states": 0 if self.centers_ is None else len(self.centers_),
                "first_model": self.relearns_[0][0] if self.relearns_ else None,
                "last_statistic": self.relearns_[-1][2] if self.relearns_ else None}


def _distinct_rows(rows: np.ndarray, at_most: int) -> int:
    """``min(at_most, number of distinct rows)``, reading only as far as needed (``np.unique``
    sorts every slice histogram: ~10 ms per re-learn on a year of slices). Rows are histograms
    (no NaN, no -0.0), so equal bytes mean equal values."""
    seen: set = set()
    for row in rows:
        seen.add(row.tobytes())
        if len(seen) >= at_most:
            break
    return len(seen)
