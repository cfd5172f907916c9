"""Nonlinear regression of the score distribution (Carastan-Santos & de Camargo 2017, section 3.3).

Every function ``f = (c1 a(r) op1 c2 b(n)) op2 c3 g(s)`` with base functions a, b,
g in {id, log10, sqrt, inv} and operators op1, op2 in {+, *, /} (576 functions)
is fitted with :func:`scipy.optimize.least_squares` minimising the weighted error
of equation 4, ``sum(((r n) (f - score))^2)``, from several starting points, and
ranked by equation 5, the mean absolute error (lower is better). ``r`` and ``s``
are clipped at 1 s, as the policies built from the functions clip them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, fields

import numpy as np
from scipy.optimize import least_squares

BASES = {"id": lambda x: x, "log10": np.log10, "sqrt": np.sqrt, "inv": lambda x: 1.0 / x}
OPERATORS = {"+": np.add, "*": np.multiply, "/": np.divide}
FORMAT = "batsched-ml-learned-policies"


@dataclass(frozen=True)
class Shape:
    alpha: str  # base function of r
    beta: str   # of n
    gamma: str  # of s
    op1: str
    op2: str

    def evaluate(self, c, r, n, s):
        a = c[0] * BASES[self.alpha](r)
        b = c[1] * BASES[self.beta](n)
        g = c[2] * BASES[self.gamma](s)
        with np.errstate(all="ignore"):
            return OPERATORS[self.op2](OPERATORS[self.op1](a, b), g)

    def expression(self, c, digits: int | None = None) -> str:
        """The fitted function as an ``expr:`` formula, same grouping: full precision (the policy
        file's), or rounded to ``digits`` significant digits for reading (``6.37e-07*r``)."""
        def term(coef, base, var):
            coef = repr(coef) if digits is None else f"{coef:.{digits}g}"
            return f"{coef}*{base}({var})" if base != "id" else f"{coef}*{var}"
        return (f"({term(c[0], self.alpha, 'r')} {self.op1} {term(c[1], self.beta, 'n')}) "
                f"{self.op2} {term(c[2], self.gamma, 's')}")

    def canonical(self) -> Shape:
        """The same family written without ``inv`` behind an operator: ``x / inv(y)`` is ``x * y`` and
        ``x * inv(y)`` is ``x / y`` (their fits are the same function, so the ranking keeps one)."""
        swap = {"*": "/", "/": "*"}
        beta, op1, gamma, op2 = self.beta, self.op1, self.gamma, self.op2
        if beta == "inv" and op1 in swap:
            beta, op1 = "id", swap[op1]
        if gamma == "inv" and op2 in swap:
            gamma, op2 = "id", swap[op2]
        return Shape(self.alpha, beta, gamma, op1, op2)

    def simplified(self, c) -> str | None:
        """Table 3's form ``a(r) * b(n) + K g(s)`` when that form keeps the order (c1 c2 > 0)."""
        if self.op1 != "*" or self.op2 != "+" or not c[0] * c[1] > 0:
            return None
        def name(base, var):
            return var if base == "id" else f"{base}({var})"
        return f"{name(self.alpha, 'r')} * {name(self.beta, 'n')} + {c[2] / (c[0] * c[1]):.3g} * {name(self.gamma, 's')}"


def all_shapes(bases=tuple(BASES), operators=tuple(OPERATORS)) -> list[Shape]:
    """Every shape over ``bases`` and ``operators`` (all of Table 1 and +, *, / by default: 576)."""
    for name in (*bases, *operators):
        if name not in BASES and name not in OPERATORS:
            raise ValueError(f"unknown base function or operator {name!r}; bases: {', '.join(BASES)}; "
                             f"operators: {' '.join(OPERATORS)}")
    return [Shape(a, b, g, o1, o2) for o1, o2 in itertools.product(operators, repeat=2)
            for a, b, g in itertools.product(bases, repeat=3)]


@dataclass
class Fit:
    shape: Shape
    coefficients: list[float]
    rank_error: float  # equation 5
    weighted_error: float  # equation 4

    def entry(self) -> dict:
        d = {"expression": self.shape.expression(self.coefficients), "coefficients": self.coefficients,
             "rank_error": self.rank_error, "weighted_error": self.weighted_error, **asdict(self.shape)}
        simple = self.shape.simplified(self.coefficients)
        if simple:
            d["simplified"] = simple
        return d


def readable(entry: dict, digits: int = 3) -> str:
    """A function of a policy file as ``learn-policy`` shows it: Table 3's form when it has one,
    else its formula with ``digits`` significant digits (the file keeps full precision)."""
    if entry.get("simplified"):
        return entry["simplified"]
    shape = Shape(**{f.name: entry[f.name] for f in fields(Shape)})
    return shape.expression(entry["coefficients"], digits)


def _prepare(r, n, s):
    return (np.maximum(np.asarray(r, dtype=np.float64), 1.0), np.asarray(n, dtype=np.float64),
            np.maximum(np.asarray(s, dtype=np.float64), 1.0))


def fit_shape(shape: Shape, r, n, s, score, starts: int = 4, seed: int = 0) -> Fit:
    """Best of ``starts`` least-squares fits of one shape (first start: all coefficients 1)."""
    r, n, s = _prepare(r, n, s)
    score = np.asarray(score, dtype=np.float64)
    weight = r * n / np.mean(r * n)  # equation 4's weight, rescaled (same minimiser)
    rng = np.random.default_rng(seed)
    best = None

    def residuals(c):
        res = weight * (shape.evaluate(c, r, n, s) - score)
        return np.where(np.isfinite(res), res, 1e6)

    for k in range(starts):
        x0 = np.ones(3) if k == 0 else rng.choice([-1.0, 1.0], 3) * 10.0 ** rng.uniform(-4, 4, 3)
        try:
            sol = least_squares(residuals, x0, method="lm", x_scale="jac", max_nfev=400)
        except (ValueError, FloatingPointError):
            continue
        cost = float(np.sum(sol.fun ** 2))
        if best is None or cost < best[0]:
            best = (cost, sol.x)
    if best is None:
        return Fit(shape, [math.nan] * 3, math.inf, math.inf)
    c = best[1]
    pred = shape.evaluate(c, r, n, s)
    rank = float(np.mean(np.abs(pred - score))) if np.all(np.isfinite(pred)) else math.inf
    return Fit(shape, [float(x) for x in c], rank, best[0] * float(np.mean(r * n)) ** 2)


def fit_all(r, n, s, score, shapes=None, starts: int = 4, seed: int = 0, map_fn=map) -> list[Fit]:
    """Every shape fitted, ranked by equation 5 (ties: the shape's order in ``all_shapes``)."""
    shapes = all_shapes() if shapes is None else shapes
    fits = list(map_fn(lambda sh: fit_shape(sh, r, n, s, score, starts, seed), shapes))
    order = sorted(range(len(fits)), key=lambda i: (fits[i].rank_error, i))
    return [fits[i] for i in order]


def canonical_fit(fit: Fit) -> Fit:
    """``fit`` written in its canonical shape: ``x / (c inv(y))`` = ``x * ((1/c) y)``, and so on."""
    family = fit.shape.canonical()
    c = list(fit.coefficients)
    if family.beta != fit.shape.beta:
        c[1] = 1.0 / c[1]
    if family.gamma != fit.shape.gamma:
        c[2] = 1.0 / c[2]
    return Fit(family, c, fit.rank_error, fit.weighted_error)


def distinct(fits: list[Fit]) -> list[Fit]:
    """Ranked fits, each in canonical form, equivalent rewritings of a better-ranked one left out."""
    seen, kept = set(), []
    for fit in fits:
        family = fit.shape.canonical()
        if family not in seen:
            seen.add(family)
            kept.append(canonical_fit(fit))
    return kept


def policy_document(fits: list[Fit], top: int, meta: dict) -> dict:
    """The JSON policy file: the ``top`` best distinct functions, best first (``learned:FILE#1``)."""
    return {"format": FORMAT, "version": 1, **meta,
            "functions": [dict(f.entry(), rank=i + 1) for i, f in enumerate(distinct(fits)[:top])]}
