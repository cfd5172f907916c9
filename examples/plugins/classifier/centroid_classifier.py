"""CentroidClassifier: a job is small when its features are closer to the small jobs' centroid.

A small/large classifier plugin (``--classifier centroid``): ``fit(X, y)`` is called at every
weekly retraining with the features of every completed job (``y`` = 1 for small), and
``predict_proba`` gives P(large), P(small) from the distances to the two class centroids. The
constructor only stores ``scale`` (``-o scale=true|false``: standardise the features first) and
``random_state`` (set from ``--seed``); learned state ends in ``_``.
"""

from __future__ import annotations

import numpy as np

from batsched_ml.api import JobClassifier, ValidationError


class CentroidClassifier(JobClassifier):
    api_version = "1.0"
    name = "centroid"

    def __init__(self, scale: bool = True, random_state=None):
        super().__init__(random_state)
        self.scale = scale

    def validate_params(self) -> None:
        if not isinstance(self.scale, bool):
            raise ValidationError(f"scale must be true or false, got {self.scale!r}")

    def reset(self):
        super().reset()
        self.mean_ = self.std_ = self.centroids_ = None
        return self

    def _fit(self, X, y):
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0) if self.scale else np.ones(X.shape[1])
        self.std_ = np.where(std > 0, std, 1.0)
        Z = (X - self.mean_) / self.std_
        self.centroids_ = np.array([Z[y == label].mean(axis=0) for label in (0, 1)])

    def _predict_proba(self, X):
        Z = (X - self.mean_) / self.std_
        distance = np.linalg.norm(Z[:, None, :] - self.centroids_[None, :, :], axis=2)
        weight = np.exp(-(distance - distance.min(axis=1, keepdims=True)))
        return weight / weight.sum(axis=1, keepdims=True)
