"""scikit-learn's estimator contract, for every learning component (predictors, corrections,
classifiers, runtime distributions).

* The constructor only stores its arguments, each under its own name, unchanged: no check,
  no conversion, no learned state. ``get_params`` / ``set_params`` read and write them (so
  ``sklearn.base.clone`` works on our components too).
* :meth:`Params.validate_params` checks them; the composer calls it when it builds a run,
  and the components call it again when learning starts (``reset`` / ``fit``), so a
  parameter changed with ``set_params`` is checked too.
* Learned state lives in attributes ending in ``_``, created when learning starts.

This is a small re-implementation rather than ``sklearn.base.BaseEstimator``: that import
alone takes 0.8 s to several seconds (it loads scipy), which ``serve`` and every short run
would pay at start-up even when no component learns anything.
"""

from __future__ import annotations

import copy
import inspect

__all__ = ["Params"]


class Params:
    """``get_params`` / ``set_params`` from the constructor's signature, as scikit-learn does."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        return [p.name for p in inspect.signature(init).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's parameters and their current values."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        """Change parameters (checked by the next ``validate_params``); returns ``self``."""
        valid = set(self._get_param_names())
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}; valid: {sorted(valid)}")
            setattr(self, key, value)
        return self

    def validate_params(self) -> None:
        """Raise a ``ValidationError`` (one line naming the parameter) for a value out of range.

        Override it; the default accepts everything."""

    def fork_from(self, previous) -> str | None:
        """A run forks from a snapshot (``simulate --fork``): ``previous`` is the snapshot's component
        of the same kind. Take over what it learned and say what, in a few words; None: start
        fresh. By default the learned state (attributes ending in ``_``) is copied when
        ``previous`` is of the same class with the same parameters -- a model learned under other
        settings is not this one's -- and nothing otherwise. Override it to take over more (from
        another class) or less (return None)."""
        if type(previous) is not type(self) or previous.get_params() != self.get_params():
            return None
        learned = previous.learned_state()
        if not learned:
            return None
        self.__dict__.update(copy.deepcopy(learned))
        return f"the snapshot's learned state ({', '.join(sorted(learned))})"

    def learned_state(self) -> dict:
        """The learned attributes (scikit-learn's convention: names ending in ``_``) and their values."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    def __getattr__(self, name: str):
        # only called for a missing attribute: a learned one before learning started
        attribute = getattr(type(self), name, None)
        if isinstance(attribute, property):  # it raised AttributeError inside: show that one
            return attribute.fget(self)
        if name.endswith("_") and not name.startswith("__"):
            raise AttributeError(f"{type(self).__name__}.{name} is learned state, created when learning "
                                 "starts: call reset() or fit() first (a scheduler does when a simulation begins)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
