"""Small/large job classifiers with scikit-learn conventions.

Every classifier has ``fit(X, y)``, ``predict(X)`` and ``predict_proba(X)``
(class 1 = small, 0 = large), hyper-parameters in the constructor and a
``random_state`` seed, plus one method the scheduler calls per submission:

``classify(job, x, divider) -> bool`` (True = small)

which lets a model answer one job much faster than scikit-learn's per-call
overhead allows (the random forest and the gradient boosting walk their trees as
plain lists in Python, ~0.1 ms instead of ~0.6-10 ms), and lets the clairvoyant
baseline look at the job itself. ``feature_importances_`` is None when the model has none.

The learned classifiers (random forest, gradient boosting) take ``small_threshold``
``t`` (0 < t < 1, default 0.5): a job is classed small when its predicted
P(small) is above the threshold; lower values trade precision for recall of the
small class (Zrigui et al.'s operating point is near t = 0.35 on KTH-SP2).
Tie rule: a job whose P(small) is exactly t is *large*, at every threshold, so
that t = 0.5 is exactly the majority rule used before the option existed
(``argmax`` with ties to class 0, large); the code keeps that very comparison at
0.5, so default results are unchanged bit for bit. Elsewhere the test is
``P(small) * (1 - t) > P(large) * t`` (= ``P(small) > t`` when the two add up
to 1, without depending on their sum's rounding). ``predict`` and ``classify``
follow the threshold; ``predict_proba`` does not depend on it.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..config.params import Params
from ..config.validate import ValidationError, check_number, open_fraction, positive, positive_int


def _max_samples(value):
    """Bootstrap size: a number of jobs (int >= 1), a share of them (0 < float <= 1) or None (all)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return positive_int(value, "max_samples", "jobs per tree")
    return check_number(value, "max_samples", low=0, high=1, low_open=True, allow_none=True,
                        meaning="share of the jobs per tree, or an integer count")


def _max_features(value):
    """Features tried per split: "sqrt", "log2", a count (int >= 1), a share (0 < float <= 1) or None."""
    if value in ("sqrt", "log2") or value is None:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return positive_int(value, "max_features")
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return check_number(value, "max_features", low=0, high=1, low_open=True, meaning="share of the features")
    raise ValidationError(f'max_features must be "sqrt", "log2", an integer >= 1 or a share in (0, 1], '
                          f"got {value!r}")


def check_small_threshold(value) -> float:
    """``value`` strictly between 0 and 1, else a ValidationError saying why."""
    return open_fraction(value, "small_threshold",
                         "a job is small when its predicted P(small) exceeds it; 0.5 = majority")


def small_from_proba(proba, small_threshold: float = 0.5) -> np.ndarray:
    """1 (small) where ``P(small) * (1 - t) > P(large) * t``, else 0 (ties -> large, like argmax at t = 0.5)."""
    proba = np.asarray(proba, dtype=np.float64)
    t = small_threshold
    return (proba[:, 1] * (1.0 - t) > proba[:, 0] * t).astype(np.int64)


class JobClassifier(Params):
    """Shared behaviour: a constant answer until fitted on two classes.

    scikit-learn's estimator contract (``batsched_ml.config.params``): the constructor stores the
    parameters, ``validate_params`` checks them (at build and in ``reset`` / ``fit``), learned
    state ends in ``_`` and is created by ``reset`` (the scheduler calls it when a simulation
    begins) or ``fit``."""

    name = "classifier"
    needs_training = True  # False: the scheduler never calls fit (clairvoyant)

    def __init__(self, random_state=None):
        self.random_state = random_state

    def reset(self):
        """Check the parameters and forget everything learned: every job is large until fitted."""
        self.validate_params()
        self.constant_: int | None = 0
        self.feature_importances_ = None
        return self

    def fit(self, X, y):
        self.reset()
        y = np.asarray(y, dtype=np.int64)
        classes = np.unique(y)
        if len(classes) < 2:
            self.constant_ = int(classes[0]) if len(classes) else 0
            self.feature_importances_ = None
            return self
        self.constant_ = None
        self._fit(np.asarray(X, dtype=np.float64), y)
        return self

    def _fit(self, X, y):
        raise NotImplementedError

    def predict_proba(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if getattr(self, "constant_", 0) is not None:
            out = np.zeros((len(X), 2))
            out[:, getattr(self, "constant_", 0)] = 1.0
            return out
        return self._predict_proba(X)

    def _predict_proba(self, X):
        raise NotImplementedError

    def predict(self, X) -> np.ndarray:
        """1 = small, 0 = large; with ``small_threshold`` (learned models) small when P(small) exceeds it."""
        proba = self.predict_proba(X)
        threshold = getattr(self, "small_threshold", 0.5)
        if threshold == 0.5:
            return np.argmax(proba, axis=1).astype(np.int64)
        return small_from_proba(proba, threshold)

    def classify(self, job, x, divider) -> bool:
        constant = getattr(self, "constant_", 0)  # unfitted: large
        if constant is not None:
            return bool(constant)
        return bool(self.predict([x])[0])

    def small_probability(self, job, x, divider) -> float:
        """The model's P(small) for one job (what ``classify`` compares with ``small_threshold``)."""
        constant = getattr(self, "constant_", 0)  # unfitted: large
        if constant is not None:
            return float(constant)
        return float(self.predict_proba([x])[0, 1])

    def classify_with_probability(self, job, x, divider) -> tuple[bool, float]:
        """``classify`` and ``small_probability`` together (a model may share the work)."""
        return self.classify(job, x, divider), self.small_probability(job, x, divider)


def tree_lists(estimator) -> tuple:
    """One fitted decision tree as plain lists (children, features, thresholds) and its leaf
    class fractions, normalised exactly as ``DecisionTreeClassifier.predict_proba`` does."""
    t = estimator.tree_
    value = t.value[:, 0, :].astype(np.float64)
    total = value.sum(axis=1)
    total[total == 0] = 1.0
    return (t.children_left.tolist(), t.children_right.tolist(), t.feature.tolist(), t.threshold.tolist(),
            value / total[:, None])


def leaf_of(tree: tuple, x) -> int:
    """The leaf a feature row ``x`` reaches in a tree from :func:`tree_lists`."""
    left, right, feature, threshold = tree[0], tree[1], tree[2], tree[3]
    node = 0
    nxt = left[0]
    while nxt != -1:
        node = nxt if x[feature[node]] <= threshold[node] else right[node]
        nxt = left[node]
    return node


class _CompiledForest:
    """The trees of a fitted forest as plain lists, for fast one-row predictions.

    Leaf values are normalised per tree exactly as ``DecisionTreeClassifier.predict_proba``
    does, summed over trees in tree order, and compared as ``s1 * (1 - t) > s0 * t`` for the
    threshold ``t`` on P(small): at t = 0.5 exactly like ``argmax`` (ties -> class 0, large).
    """

    def __init__(self, estimators):
        self.trees = []
        for est in estimators:
            left, right, feature, threshold, frac = tree_lists(est)
            self.trees.append((left, right, feature, threshold, frac[:, 0].tolist(), frac[:, 1].tolist()))

    def sums(self, x) -> tuple[float, float]:
        """Per-tree P(large) and P(small) of row ``x``, summed over the trees in tree order."""
        s0 = s1 = 0.0
        for tree in self.trees:
            node = leaf_of(tree, x)
            s0 += tree[4][node]
            s1 += tree[5][node]
        return s0, s1

    def predict_one(self, x, small_threshold: float = 0.5) -> int:
        return self.decide(*self.sums(x), small_threshold)

    def decide(self, s0: float, s1: float, small_threshold: float = 0.5) -> int:
        """1 (small) or 0 from the summed per-tree probabilities of :meth:`sums`."""
        if small_threshold == 0.5:
            return 1 if s1 > s0 else 0
        # the same sums divided by the number of trees are scikit-learn's predict_proba, bit for bit
        n = len(self.trees)
        return 1 if (s1 / n) * (1.0 - small_threshold) > (s0 / n) * small_threshold else 0


class SubsampledForest:
    """``RandomForestClassifier(max_samples=k)``'s fit, tree for tree, for k draws from n > k rows.

    scikit-learn fits each tree on all n rows, with the bootstrap's draw counts as weights (zero
    for the rows not drawn): O(n) per tree, whatever k, so a weekly retraining on a history of
    450,000 jobs cost ~0.9 s for 40 trees of 5,000 draws. Here each tree is fitted on the rows
    its bootstrap drew, with their counts as weights: the trees scikit-learn grows from the same
    seeds (same bootstrap, same rows in the same order, same weights; a tree's splitter leaves
    zero-weight rows out), for O(k log k) per tree (tests/test_classification.py compares them).
    The seeds are drawn as scikit-learn's forest draws them (one ``randint(2**31 - 1)`` per tree
    from ``random_state``), each tree's bootstrap as ``_generate_sample_indices`` draws it. A
    draw holding one class only is fitted on every row, as scikit-learn does (its tree then still
    knows both classes). ``predict_proba`` and ``feature_importances_`` are the forest's own
    computations (the same sums, in tree order)."""

    def __init__(self, forest):
        self.forest = forest  # an unfitted RandomForestClassifier: the parameters
        self.estimators_: list = []
        self.classes_ = np.array([0, 1])

    def fit(self, X, y):
        from sklearn.tree import DecisionTreeClassifier
        from sklearn.utils import check_random_state

        forest = self.forest
        n = len(X)
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        self.n_features_in_ = X.shape[1]
        params = {name: getattr(forest, name) for name in forest.estimator_params}
        random_state = check_random_state(forest.random_state)
        seeds = [random_state.randint(np.iinfo(np.int32).max) for _ in range(forest.n_estimators)]
        full = None
        self.estimators_ = []
        for seed in seeds:
            drawn = check_random_state(seed).randint(0, n, forest.max_samples)
            rows, counts = np.unique(drawn, return_counts=True)
            tree = DecisionTreeClassifier(**dict(params, random_state=seed))
            labels = y[rows]
            if labels.min() != labels.max():
                part, weights = X[rows].astype(np.float32), counts.astype(np.float64)
            else:
                if full is None:
                    full = X.astype(np.float32)
                part, labels, weights = full, y, np.zeros(n)
                weights[rows] = counts
            # as the forest fits its trees: the inputs are checked above (float32 rows, 0/1 labels),
            # not once per tree (scikit-learn's parameter and input checks: ~0.5 ms a tree)
            tree._fit(part, labels, sample_weight=weights, check_input=False)
            self.estimators_.append(tree)
        return self

    def predict_proba(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        out = np.zeros((len(X), 2), dtype=np.float64)
        for tree in self.estimators_:
            out += tree.predict_proba(X, check_input=False)
        out /= len(self.estimators_)
        return out

    @property
    def feature_importances_(self) -> np.ndarray:
        found = [tree.feature_importances_ for tree in self.estimators_ if tree.tree_.node_count > 1]
        if not found:
            return np.zeros(self.n_features_in_, dtype=np.float64)
        mean = np.mean(found, axis=0, dtype=np.float64)
        return mean / np.sum(mean)


class RandomForestJobClassifier(JobClassifier):
    """scikit-learn's RandomForestClassifier (the paper's model).

    Defaults keep the weekly retraining fast on full traces (measured on KTH-SP2: same
    precision/recall as 50-100 deeper trees): 30 trees, depth 12, leaves of at least 3 jobs, and each tree bootstrapped on at most ``max_samples``
    jobs (beyond that the history is subsampled, so a retraining costs about the same
    however long the history). ``small_threshold`` (0 < t < 1, default 0.5): a job is
    small when the forest's mean P(small) exceeds it (see the module docstring).
    """

    name = "random-forest"

    def __init__(self, n_estimators=30, max_depth=12, min_samples_leaf=3, max_samples=5000,
                 max_features="sqrt", n_jobs=1, random_state=None, small_threshold=0.5):
        super().__init__(random_state)
        self.small_threshold = small_threshold
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_samples = max_samples
        self.max_features = max_features
        self.n_jobs = n_jobs

    def validate_params(self) -> None:
        check_small_threshold(self.small_threshold)
        positive_int(self.n_estimators, "n_estimators", "trees in the forest")
        positive_int(self.max_depth, "max_depth", allow_none=True)
        positive_int(self.min_samples_leaf, "min_samples_leaf")
        _max_samples(self.max_samples)
        _max_features(self.max_features)
        if check_number(self.n_jobs, "n_jobs", integer=True, allow_none=True) == 0:
            raise ValidationError("n_jobs must be a non-zero integer (worker processes; -1 = all cores), got 0")

    def reset(self):
        super().reset()
        self.model_ = None
        self.compiled_ = None
        return self

    def _fit(self, X, y):
        from sklearn.ensemble import RandomForestClassifier

        max_samples = self.max_samples
        if max_samples is not None and isinstance(max_samples, int) and max_samples >= len(X):
            max_samples = None
        forest = RandomForestClassifier(
            n_estimators=self.n_estimators, max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf, max_samples=max_samples,
            max_features=self.max_features, n_jobs=self.n_jobs, random_state=self.random_state)
        if isinstance(max_samples, int) and self.n_jobs in (None, 1):
            self.model_ = SubsampledForest(forest).fit(X, y)
        else:
            self.model_ = forest.fit(X, y)
        self.compiled_ = _CompiledForest(self.model_.estimators_)
        self.feature_importances_ = self.model_.feature_importances_.tolist()

    def _predict_proba(self, X):
        return self.model_.predict_proba(X)

    def __getstate__(self) -> dict:
        """Without the compiled trees (120,000 list items for 40 trees, rebuilt from ``model_`` on
        loading): a snapshot pickles the forest once, as sklearn's arrays."""
        state = dict(self.__dict__)
        if state.get("model_") is not None:
            state["compiled_"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.__dict__.get("model_") is not None and self.compiled_ is None:
            self.compiled_ = _CompiledForest(self.model_.estimators_)

    def classify(self, job, x, divider) -> bool:
        constant = getattr(self, "constant_", 0)
        if constant is not None:
            return bool(constant)
        return self.compiled_.predict_one(x, self.small_threshold) == 1

    def small_probability(self, job, x, divider) -> float:
        constant = getattr(self, "constant_", 0)
        if constant is not None:
            return float(constant)
        return self.compiled_.sums(x)[1] / len(self.compiled_.trees)

    def classify_with_probability(self, job, x, divider) -> tuple[bool, float]:
        constant = getattr(self, "constant_", 0)
        if constant is not None:
            return bool(constant), float(constant)
        s0, s1 = self.compiled_.sums(x)
        return self.compiled_.decide(s0, s1, self.small_threshold) == 1, s1 / len(self.compiled_.trees)


class _CompiledBoosting:
    """The trees of a fitted ``HistGradientBoostingClassifier`` as plain lists, for one-row
    predictions at ~0.1 ms instead of scikit-learn's ~0.6 ms (a Python call per tree).

    scikit-learn has no public view of these trees, so this reads the fitted model's
    ``_predictors`` and ``_baseline_prediction`` (binary classification, numerical features);
    :meth:`from_model` returns None when they are not as expected, and the classifier then
    asks ``predict_proba``. The raw score is summed as ``_raw_predict`` does (0 + baseline +
    each tree in order) and turned into P(small) by the same ``expit``, so the answers are
    scikit-learn's bit for bit (tests/test_classification.py).
    """

    def __init__(self, baseline: float, trees: list):
        from scipy.special import expit  # scikit-learn's own link, imported only with a boosted model

        self.baseline = baseline
        self.trees = trees  # per tree: (left, right, feature, threshold, nan_left, leaf, value)
        self.expit = expit

    @classmethod
    def from_model(cls, model) -> "_CompiledBoosting | None":
        predictors = getattr(model, "_predictors", None)
        baseline = getattr(model, "_baseline_prediction", None)
        if predictors is None or baseline is None or np.size(baseline) != 1:
            return None
        trees = []
        for per_iteration in predictors:
            if len(per_iteration) != 1:
                return None
            nodes = getattr(per_iteration[0], "nodes", None)
            names = getattr(getattr(nodes, "dtype", None), "names", None) or ()
            wanted = ("left", "right", "feature_idx", "num_threshold", "missing_go_to_left", "is_leaf", "value")
            if any(name not in names for name in wanted) or ("is_categorical" in names and nodes["is_categorical"].any()):
                return None
            trees.append(tuple(nodes[name].tolist() for name in wanted))
        return cls(float(np.asarray(baseline).reshape(-1)[0]), trees)

    def small_probability(self, x) -> float:
        raw = self.baseline
        for left, right, feature, threshold, nan_left, leaf, value in self.trees:
            node = 0
            while not leaf[node]:
                v = x[feature[node]]
                if v != v:  # NaN: the side the training sent missing values to
                    node = left[node] if nan_left[node] else right[node]
                else:
                    node = left[node] if v <= threshold[node] else right[node]
            raw += value[node]
        return float(self.expit(raw))


def decide_small(p_small: float, small_threshold: float) -> bool:
    """``small_from_proba`` for one row whose probabilities are ``[1 - p_small, p_small]``."""
    p_large = 1.0 - p_small
    if small_threshold == 0.5:
        return p_small > p_large  # argmax, ties -> large
    return p_small * (1.0 - small_threshold) > p_large * small_threshold


class GradientBoostingJobClassifier(JobClassifier):
    """scikit-learn's HistGradientBoostingClassifier, without early stopping.

    Nothing in it is random (no bootstrap, no feature sampling, no validation split; only
    beyond 200,000 training rows does scikit-learn bin on a seeded sample), so unlike the
    forest its classes do not depend on the seed. The schedule still moves as much under a
    sub-second jitter of the submissions as the forest's under a new seed
    (``benchmarks/results/classification.md``). Fitted and asked on one OpenMP thread: a
    campaign runs one simulation per core, and on a busy machine OpenMP's thread pool made a
    KTH-SP2 replay cost 21 CPU s per 1,000 jobs instead of 0.8.
    ``small_threshold`` (0 < t < 1, default 0.5): small when P(small) exceeds it.
    """

    name = "gradient-boosting"

    def __init__(self, max_iter=100, learning_rate=0.1, max_depth=None, max_leaf_nodes=31,
                 min_samples_leaf=20, l2_regularization=0.0, random_state=None, small_threshold=0.5):
        super().__init__(random_state)
        self.small_threshold = small_threshold
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization

    def validate_params(self) -> None:
        check_small_threshold(self.small_threshold)
        positive_int(self.max_iter, "max_iter", "boosting iterations")
        positive(self.learning_rate, "learning_rate")
        positive_int(self.max_depth, "max_depth", allow_none=True)
        check_number(self.max_leaf_nodes, "max_leaf_nodes", low=2, integer=True, allow_none=True)
        positive_int(self.min_samples_leaf, "min_samples_leaf")
        check_number(self.l2_regularization, "l2_regularization", low=0)

    def reset(self):
        super().reset()
        self.model_ = None
        self.compiled_ = None
        return self

    def _fit(self, X, y):
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits

        self.model_ = HistGradientBoostingClassifier(
            max_iter=self.max_iter, learning_rate=self.learning_rate, max_depth=self.max_depth,
            max_leaf_nodes=self.max_leaf_nodes, min_samples_leaf=self.min_samples_leaf,
            l2_regularization=self.l2_regularization, early_stopping=False, random_state=self.random_state)
        with threadpool_limits(limits=1, user_api="openmp"):
            self.model_.fit(X, y)
        self.compiled_ = _CompiledBoosting.from_model(self.model_)
        self.feature_importances_ = None

    def _predict_proba(self, X):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="openmp"):
            return self.model_.predict_proba(X)

    def _p_small(self, x) -> float:
        """P(small) of one row: from the trees as lists, else (trees laid out otherwise) from scikit-learn."""
        if self.compiled_ is None:
            return float(self.predict_proba([x])[0, 1])
        return self.compiled_.small_probability(x)

    def small_probability(self, job, x, divider) -> float:
        constant = getattr(self, "constant_", 0)
        if constant is not None:
            return float(constant)
        return self._p_small(x)

    def classify(self, job, x, divider) -> bool:
        return self.classify_with_probability(job, x, divider)[0]

    def classify_with_probability(self, job, x, divider) -> tuple[bool, float]:
        constant = getattr(self, "constant_", 0)
        if constant is not None:
            return bool(constant), float(constant)
        p_small = self._p_small(x)
        return decide_small(p_small, self.small_threshold), p_small


class ClairvoyantClassifier(JobClassifier):
    """Knows each job's true class in advance: its actual runtime vs the current divider.

    Needs delay profiles (``job.runtime``); without a divider (first week) every job is large.
    """

    name = "clairvoyant"
    needs_training = False

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        raise TypeError("the clairvoyant classifier answers per job (classify), not from features")

    def small_probability(self, job, x, divider) -> float:
        return float(self.classify(job, x, divider))

    def classify(self, job, x, divider) -> bool:
        if divider is None:
            return False
        if job.runtime is None:
            raise ValueError(f"clairvoyant classification needs the runtime of {job.id} (a delay profile)")
        return job.runtime < divider
