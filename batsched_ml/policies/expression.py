"""Queue orders given as formulas: ``--policy expr:'log10(r)*n + 870*log10(s)'`` and
``--policy learned:policies.json#2`` (the second function of a ``learn-policy`` file).

The formula is parsed with :mod:`ast` and only a whitelist is accepted: numbers,
the variables ``r`` (current runtime estimate), ``n`` (cores), ``s`` (submission
time from the workload start), ``w`` (waiting time), the operators ``+ - * / **``
and the functions in ``FUNCTIONS``. It is compiled into nested closures, never
handed to ``eval``. As in the built-in F1-F4, ``r`` and ``s`` are clipped at 1 s
and ties fall back to (submission time, job id). A value that cannot be computed
(``log10(0)``, ``1/0``) sorts last. A formula using ``w`` is dynamic (re-sorted
at every pass, like WFP3).
"""

from __future__ import annotations

import ast
import json
import math
import operator
from pathlib import Path

from .orders import Policy

VARIABLES = ("r", "n", "s", "w")
FUNCTIONS = {"log10": math.log10, "log2": math.log2, "log": math.log, "sqrt": math.sqrt, "exp": math.exp,
             "abs": abs, "min": min, "max": max, "inv": lambda x: 1.0 / x, "id": lambda x: x}
BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.Pow: operator.pow}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class ExpressionError(ValueError):
    """A formula that is not arithmetic over r, n, s, w (the message says what was refused)."""


def _compile(node: ast.AST, text: str):
    """A function of the variables dict computing ``node``; raises ExpressionError on anything else."""
    if isinstance(node, ast.Expression):
        return _compile(node.body, text)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = float(node.value)
        return lambda v: value
    if isinstance(node, ast.Name):
        if node.id not in VARIABLES:
            raise ExpressionError(f"unknown name {node.id!r} in {text!r}; variables: {', '.join(VARIABLES)}")
        name = node.id
        return lambda v: v[name]
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        op, left, right = BINARY[type(node.op)], _compile(node.left, text), _compile(node.right, text)
        return lambda v: op(left(v), right(v))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        op, operand = UNARY[type(node.op)], _compile(node.operand, text)
        return lambda v: op(operand(v))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            called = ast.unparse(node.func)
            raise ExpressionError(f"function {called!r} not allowed in {text!r}; functions: {', '.join(FUNCTIONS)}")
        fn, args = FUNCTIONS[node.func.id], [_compile(a, text) for a in node.args]
        if not args:
            raise ExpressionError(f"{node.func.id}() needs an argument in {text!r}")
        return lambda v: fn(*(a(v) for a in args))
    raise ExpressionError(f"{type(node).__name__} not allowed in {text!r}: only numbers, r n s w, "
                          "+ - * / ** and the functions " + ", ".join(FUNCTIONS))


def compile_expression(text: str):
    """``(function of a variables dict, set of variables used)`` for a formula."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("empty expression")
    if len(text) > 2000:
        raise ExpressionError("expression longer than 2000 characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {text!r}: {exc.msg}") from None
    fn = _compile(tree, text)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in VARIABLES}
    return fn, used


class ExpressionPolicy(Policy):
    """Order by the value of a formula over r, n, s, w (lower runs first)."""

    def __init__(self, expression: str, name: str | None = None):
        self.expression = expression
        self._fn, used = compile_expression(expression)
        self.dynamic = "w" in used
        self.name = name or f"expr:{expression}"

    def value(self, r: float, n: float, s: float, w: float = 0.0) -> float:
        try:
            result = self._fn({"r": max(r, 1.0), "n": n, "s": max(s, 1.0), "w": w})
        except (ZeroDivisionError, ValueError, OverflowError):
            return math.inf
        if isinstance(result, complex) or math.isnan(result):
            return math.inf
        return result

    def key(self, job, now):
        return (self.value(job.estimate, job.res, job.subtime, now - job.submission_time),
                job.submission_time, job.id)

    def __getstate__(self) -> dict:
        """Pickled by its formula: the compiled closures are built again when loaded (snapshots)."""
        state = dict(self.__dict__)
        del state["_fn"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fn, _ = compile_expression(self.expression)

    def __repr__(self) -> str:
        return f"ExpressionPolicy({self.expression!r})"


def load_learned(spec: str) -> dict:
    """The function entry ``FILE.json[#k]`` names (k counts from 1, default 1)."""
    path, _, index = spec.rpartition("#") if "#" in spec else (spec, "", "1")
    try:
        k = int(index)
    except ValueError:
        raise ExpressionError(f"learned:{spec}: '#{index}' is not a function number") from None
    try:
        data = json.loads(Path(path).read_text())
        functions = data["functions"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ExpressionError(f"learned:{spec}: not a policy file ({exc})") from None
    if not 1 <= k <= len(functions):
        raise ExpressionError(f"learned:{spec}: the file has {len(functions)} functions, asked for #{k}")
    return functions[k - 1]


def learned_policy(spec: str) -> ExpressionPolicy:
    entry = load_learned(spec)
    return ExpressionPolicy(entry["expression"], name=f"learned:{spec}")


# Policies named by a formula or a file rather than a plugin name (``--policy PREFIX...``).
SPEC_PREFIXES = ("expr:", "learned:", "rl:")


def policy_from_spec(spec: str) -> Policy | None:
    """``expr:...``, ``learned:...`` or ``rl:FILE.json`` (a scoring network, see
    ``policies.network``) as a policy; None for any other name."""
    if spec.startswith("expr:"):
        return ExpressionPolicy(spec[len("expr:"):])
    if spec.startswith("learned:"):
        return learned_policy(spec[len("learned:"):])
    if spec.startswith("rl:"):
        from .network import network_policy

        return network_policy(spec[len("rl:"):])
    return None
