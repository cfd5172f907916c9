"""The campaign task kinds of reinforcement learning (entry points of ``batsched_ml.campaign_tasks``):

* ``train-policy`` (a ``[train.NAME]`` table): ``batsched-ml train-policy`` on the table's traces,
  one task per seed; its file is the policy (``@NAME`` in a config), its checkpoint kept under
  ``RESULTS_DIR/work`` so that an interrupted campaign resumes the training where it stopped;
* ``evaluate-policy`` (a ``[configs.NAME]`` table): one order on a protocol's evaluation
  sequences of a trace (``batsched-ml evaluate-policy``), one task per sequence (the trace's
  windows in the report: a config's mean and interval run over them).

The keys are the commands' flags, dashes as underscores.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..campaign.errors import CampaignError
from ..campaign.kinds import REFERENCE, TaskKind, Unit
from .protocols import PROTOCOLS, get_protocol

__all__ = ["EvaluatePolicyKind", "EvaluationSettings", "TrainPolicyKind", "TrainingTable"]

POLICY_SUFFIX = "_policy.json"


def _digest(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _trace_file(trace, where: str) -> str:
    """The file of a campaign trace that a protocol reads whole (no window, cut or generator)."""
    if trace.source == "generate" or trace.path is None:
        raise CampaignError(f"{where}: trace {trace.name!r} is generated; these tasks read an SWF or workload file")
    for key in ("max_jobs", "windows", "jitter"):
        if getattr(trace, key) is not None:
            raise CampaignError(f"{where}: trace {trace.name!r} sets {key}; these tasks read the whole file "
                                "(a protocol cuts its own sequences)")
    return str(trace.path)


def _check_keys(table: dict, keys, where: str) -> None:
    from ..campaign.expand import check_keys

    check_keys(table, keys, where)


def _flags(table: dict, order) -> tuple[str, ...]:
    out = []
    for key in order:
        if key not in table:
            continue
        value = table[key]
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    return tuple(out)


# ----------------------------------------------------------------------------- evaluate-policy
@dataclass(frozen=True)
class EvaluationSettings:
    """An order on a protocol's evaluation set (``evaluate-policy``'s flags), and the run's seed
    (a training's seed for ``rl:@NAME``; the draw of ``sample = true``)."""

    order: str
    protocol: str = "batsched-ml"
    backfill: bool = False
    sequences: int = 10
    sequence_length: int = 1024
    sequence_seed: int | None = None  # default: the protocol's
    cores: int | None = None
    sample: bool = False  # rlscheduler-model:DIR drawn from its softmax with the run's seed
    seed: int = 0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def spec(self) -> str:
        """The order as ``evaluate-policy --orders`` takes it (``$VAR`` expanded, the draw's seed)."""
        order = os.path.expandvars(self.order)
        return f"{order}#sample={self.seed}" if self.sample else order


class EvaluatePolicyKind(TaskKind):
    name = "evaluate-policy"
    command = "batsched-ml evaluate-policy"
    KEYS = ("order", "protocol", "backfill", "sequences", "sequence_length", "sequence_seed", "cores", "sample")

    def keys(self) -> list[str]:
        return list(self.KEYS)

    def argv(self, table: dict, where: str) -> tuple[str, ...]:
        renamed = {("orders" if k == "order" else k): v for k, v in table.items() if k != "sample"}
        if table.get("sample") and "orders" in renamed:  # each seed a draw (EvaluationSettings.spec)
            renamed["orders"] = f"{renamed['orders']}#sample=SEED"
        return _flags(renamed, ("protocol", "orders", "backfill", "sequences", "sequence_length", "sequence_seed",
                                "cores"))

    def settings(self, table: dict, where: str, deferred: frozenset = frozenset()) -> EvaluationSettings:
        _check_keys(table, self.KEYS, where)
        if not isinstance(table.get("order"), str) or not table["order"]:
            raise CampaignError(f"{where}: order is required: one order, e.g. \"f1\" or \"rl:@NAME\"")
        protocol = table.get("protocol", "batsched-ml")
        if protocol not in PROTOCOLS:
            raise CampaignError(f"{where}: unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
        for key in ("backfill", "sample"):
            if not isinstance(table.get(key, False), bool):
                raise CampaignError(f"{where}: {key} must be true or false")
        for key in ("sequences", "sequence_length", "cores", "sequence_seed"):
            value = table.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < (0 if key == "sequence_seed" else 1)):
                raise CampaignError(f"{where}: {key} must be an integer >= {0 if key == 'sequence_seed' else 1}")
        settings = EvaluationSettings(**table)
        if settings.sample and not settings.order.startswith("rlscheduler-model:"):
            raise CampaignError(f"{where}: sample = true draws from their trained model (rlscheduler-model:DIR)")
        # checked now, unless it names a training's file or an unset variable (data the user may not
        # have: those tasks fail, saying why, and the rest of the campaign runs)
        if "order" not in deferred and not REFERENCE.search(settings.order) and "$" not in settings.spec:
            try:
                get_protocol(protocol).scorer(settings.spec)  # an unknown order or a bad file: now
            except (ValueError, OSError, LookupError) as exc:
                raise CampaignError(f"{where}: {' '.join(str(exc).split())}") from None
        return settings

    def file_digests(self, settings: EvaluationSettings) -> dict:
        """The policy file of ``rl:FILE``, or every file of ``rlscheduler-model:DIR``."""
        spec = settings.spec.split("#", 1)[0]
        if REFERENCE.search(spec):
            return {}
        from ..campaign.inputs import file_digest

        path = Path(spec.partition(":")[2]) if ":" in spec else None
        if path is None:
            return {}
        if path.is_file():
            return {str(path): file_digest(path)}
        if path.is_dir():
            return {str(p): file_digest(p) for p in sorted(path.rglob("*")) if p.is_file()}
        return {}

    def unit_key(self, settings: EvaluationSettings):
        return (settings.protocol, settings.sequences, settings.sequence_length, settings.sequence_seed,
                settings.cores)

    def units(self, trace, settings: EvaluationSettings, inputs_dir: Path) -> list[Unit]:
        """One unit per evaluation sequence: its index is the window, its first job's submission
        (from the trace's first) the window's start."""
        from ..campaign.inputs import file_digest

        where = f"evaluate-policy on [traces.{trace.name}]"
        path = _trace_file(trace, where)
        protocol = get_protocol(settings.protocol)
        cores = settings.cores or trace.nodes
        loaded = protocol.load_trace(path, cores)
        pool = protocol.evaluation_sequences(loaded, settings.sequence_length)
        seed = protocol.seed if settings.sequence_seed is None else settings.sequence_seed
        digest = file_digest(path)
        return [Unit(k, protocol.submit_offset(loaded, start), _digest(digest, protocol.name, cores,
                                                                        settings.sequence_length, start),
                     settings.sequence_length, {"trace": path, "cores": cores, "start": int(start)})
                for k, start in enumerate(pool.starts(settings.sequences, seed))]

    def run(self, task) -> dict:
        s: EvaluationSettings = task.settings
        t0 = time.perf_counter()
        protocol = get_protocol(s.protocol)
        pool = _pool(s.protocol, task.inputs["trace"], task.inputs["cores"], s.sequence_length)
        mode = protocol.backfill_rule if s.backfill else "none"
        value = float(_scorer(s.protocol, s.spec)(pool, task.inputs["start"], mode))
        metrics = {"avebsld_tau10": value, "start": task.inputs["start"], "jobs": s.sequence_length,
                   "protocol": s.protocol, "backfill": mode}
        row = {"trace": task.trace, "window": task.window, "config": task.config, "seed": task.seed,
               "status": "ok", "error": None, "jobs": s.sequence_length, "avebsld10": value,
               "wall_s": time.perf_counter() - t0, "window_start": task.window_start, "unfinished": 0,
               "key": task.key, "metrics": metrics}
        return {"row": row, "files": {}}


@lru_cache(maxsize=8)
def _pool(protocol: str, path: str, cores, length: int):
    """A protocol's evaluation sequences of a trace, read once per worker process."""
    p = get_protocol(protocol)
    return p.evaluation_sequences(p.load_trace(path, cores), length)


@lru_cache(maxsize=32)
def _scorer(protocol: str, order: str):
    return get_protocol(protocol).scorer(order)


# ----------------------------------------------------------------------------- train-policy
@dataclass(frozen=True)
class TrainingTable:
    """A ``[train.NAME]`` table's settings: the algorithm and its flags (``train-policy``'s, dashes
    as underscores; ``starvation_threshold``: CMA-ES under the bound), and the run's seed."""

    algorithm: str = "es"
    params: dict = field(default_factory=dict)
    seed: int = 0

    def to_dict(self) -> dict:
        return {"algorithm": self.algorithm, **self.params, "seed": self.seed}


class TrainPolicyKind(TaskKind):
    name = "train-policy"
    command = "batsched-ml train-policy"
    output = POLICY_SUFFIX
    SHARED = ("protocol", "backfill", "sequence_length", "start_range", "hidden", "fits_now", "cores")
    OWN = {"es": ("generations", "population", "sequences", "sigma", "starvation_threshold", "tail_weight"),
           "ppo": ("timesteps", "window", "reward", "envs")}

    def keys(self) -> list[str]:
        return ["algorithm", *self.SHARED, *(k for keys in self.OWN.values() for k in keys)]

    def argv(self, table: dict, where: str) -> tuple[str, ...]:
        return _flags(table, self.keys())

    def settings(self, table: dict, where: str, deferred: frozenset = frozenset()) -> TrainingTable:
        _check_keys(table, self.keys(), where)
        algorithm = table.get("algorithm", "es")
        if algorithm not in self.OWN:
            raise CampaignError(f"{where}: algorithm must be one of {', '.join(self.OWN)}, not {algorithm!r}")
        other = [k for a, keys in self.OWN.items() if a != algorithm for k in keys if k in table]
        if other:
            raise CampaignError(f"{where}: {other[0]} is a setting of another algorithm than {algorithm}")
        params = {k: (tuple(v) if isinstance(v, list) else v) for k, v in table.items() if k != "algorithm"}
        settings = TrainingTable(algorithm, params)
        try:
            self.config(settings, ("<trace>",)).check() if algorithm == "es" else self.config(settings, ("<trace>",))
        except (TypeError, ValueError) as exc:
            raise CampaignError(f"{where}: {' '.join(str(exc).split())}") from None
        return settings

    @staticmethod
    def config(settings: TrainingTable, workloads: tuple):
        """The trainer's configuration (``es.ESConfig`` or ``ppo.PPOConfig``) on ``workloads``."""
        params = dict(settings.params)
        cores = params.pop("cores", None)
        protocol = params.get("protocol", "batsched-ml")
        params.setdefault("start_range", (0.0, 0.8) if protocol == "batsched-ml" else (0.0, 1.0))
        workload = workloads[0] if len(workloads) == 1 else tuple(workloads)
        if settings.algorithm == "ppo":
            from .ppo import PPOConfig

            if len(workloads) > 1:
                raise ValueError("ppo trains on one trace")
            return PPOConfig(workload=workload, nb_cores=cores, seed=settings.seed, **params)
        from .es import ESConfig

        return ESConfig(workload=workload, nb_cores=cores, seed=settings.seed, **params)

    def training_unit(self, traces: list, settings: TrainingTable, inputs_dir: Path) -> Unit:
        from ..campaign.inputs import file_digest

        paths = [_trace_file(t, f"train-policy on [traces.{t.name}]") for t in traces]
        nodes = {t.nodes for t in traces} - {None}
        if len(nodes) > 1 or (nodes and len(traces) > 1):
            raise CampaignError("train-policy: a machine size (nodes) for one of several traces; give none")
        params = settings.params
        if settings.algorithm == "es":
            work = (params.get("generations", 30) * params.get("population", 8) * params.get("sequences", 4)
                    * params.get("sequence_length", 256))
        else:
            work = params.get("timesteps", 100_000)
        digest = _digest([file_digest(p) for p in paths], sorted(nodes))
        return Unit(-1, 0.0, digest, work, {"workloads": paths, "cores": next(iter(nodes), None), "digest": digest})

    def run(self, task) -> dict:
        from ..executor import task_directory

        settings: TrainingTable = task.settings
        if task.inputs.get("cores") is not None and "cores" not in settings.params:
            settings = dataclasses.replace(settings, params={**settings.params, "cores": task.inputs["cores"]})
        config = self.config(settings, tuple(task.inputs["workloads"]))
        Path(task.workdir).mkdir(parents=True, exist_ok=True)
        # named by what is trained, not by the code version (the task's key): as train-policy's own
        # checkpoint, it resumes after an edit of the package (delete RESULTS_DIR/work to start over)
        checkpoint = Path(task.workdir) / f"{_digest(task.inputs['digest'], settings.to_dict())[:32]}.checkpoint.pkl"
        t0 = time.perf_counter()
        with task_directory("batsched-train-") as tmp:
            output = Path(tmp) / "policy.json"
            if settings.algorithm == "ppo":
                from .ppo import train_ppo

                network = train_ppo(config, output, checkpoint=checkpoint, progress=False, log=None)
            else:
                from .es import train_es

                network = train_es(config, output, checkpoint=checkpoint)
            data = output.read_bytes()
        meta = network.metadata
        metrics = {k: meta.get(k) for k in ("algorithm", "generations", "timesteps", "simulated_jobs",
                                            "cpu_time_s", "wall_time_s") if meta.get(k) is not None}
        if isinstance(meta.get("fitness"), dict):
            metrics["fitness"] = meta["fitness"].get("mean")
        metrics["weights"] = network.nb_parameters
        row = {"trace": task.trace, "window": task.window, "config": task.config, "seed": task.seed,
               "status": "ok", "error": None, "wall_s": time.perf_counter() - t0, "key": task.key,
               "metrics": metrics}
        return {"row": row, "files": {POLICY_SUFFIX: data}}
