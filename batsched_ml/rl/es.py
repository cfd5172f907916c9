"""Training a scoring network by evolution strategies (CMA-ES, the ``cma`` package): the light path,
no deep-learning dependency, small enough for CI.

The search space is the weights of a :class:`~batsched_ml.policies.network.ScoringNetwork`
(4 features, one hidden tanh layer of 8 by default: 49 numbers). A candidate is scored by
running it *as it will be deployed* -- the queue order of the real ``fcfs`` or ``easy``
scheduler (``evaluate.run_policy``) -- on ``sequences`` job sequences of the training range
drawn afresh each generation (the same ones for every candidate of a generation: common random
numbers), and its fitness is the mean over them of ``log(AVEbsld / AVEbsld of FCFS)``
(scale-free: a sequence where every order is bad does not drown the others; 0 = FCFS,
negative = better). CMA-ES minimises it.

The search starts from all-zero weights, i.e. every job scored equal: FCFS. After every
generation the checkpoint (the CMA-ES state, numpy's global random state which ``cma``
samples from, the history) is written atomically next to the output, and so is the network of
the current distribution mean (CMA-ES's best estimate under noisy fitness): an interrupted
run keeps a usable policy, and the same command resumes from the checkpoint, to the same
result as an uninterrupted run.
"""

from __future__ import annotations

import math
import os
import pickle
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from ..policies.network import AGENT_FEATURES, FEATURES, ScoringNetwork
from ..stopwatch import Stopwatch
from .episodes import TrainingSettings
from .protocols import get_protocol

__all__ = ["ESConfig", "train_es"]


@dataclass(frozen=True)
class ESConfig(TrainingSettings):
    """Everything that decides a training run's result (a checkpoint resumes only the same)."""

    sequences: int = 4
    population: int = 8
    generations: int = 30
    sigma: float = 0.5
    tau: float = 10.0

    def check(self) -> None:
        for name in ("sequence_length", "sequences", "population", "generations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if self.population < 2:
            raise ValueError(f"population must be >= 2 (CMA-ES ranks candidates), got {self.population}")
        if not self.sigma > 0:
            raise ValueError(f"sigma must be > 0, got {self.sigma}")
        if any(h < 1 for h in self.hidden):
            raise ValueError(f"hidden layer widths must be >= 1, got {self.hidden}")
        get_protocol(self.protocol).check_backfill(self.backfill)


@dataclass
class ESState:
    """What a checkpoint holds."""

    config: ESConfig
    es: object  # cma.CMAEvolutionStrategy
    numpy_random: tuple  # np.random.get_state(): cma samples from numpy's global generator
    generation: int = 0
    history: list = field(default_factory=list)  # per generation: best, mean, median fitness
    baseline: dict = field(default_factory=dict)  # sequence start -> FCFS AVEbsld
    wall_time: float = 0.0
    cpu_time: float = 0.0
    simulated_jobs: int = 0
    simulated_sequences: int = 0
    workload_file: str | None = None  # the workload's absolute path (a file): the same trace by another path resumes


def checkpoint_path(output) -> Path:
    return Path(str(output) + ".checkpoint.pkl")


def train_es(config: ESConfig, output, *, checkpoint=None, restart: bool = False, progress=None,
             log=None) -> ScoringNetwork:
    """Run (or resume) the training; write the network to ``output`` after every generation and
    return the final one. ``progress``: a ``progress.TaskProgress``-like object (``start``,
    ``task_done``, ``close``); ``log(text)``: one line per generation."""
    import cma

    config.check()
    protocol = get_protocol(config.protocol)
    trace = protocol.load_trace(config.workload, config.nb_cores)
    sequences = protocol.sequences(trace, config.sequence_length, config.start_range)
    fcfs = protocol.scorer("fcfs")
    shape = ScoringNetwork.shaped(config.hidden, AGENT_FEATURES if config.fits_now else FEATURES)
    checkpoint = Path(checkpoint) if checkpoint is not None else checkpoint_path(output)
    state = None if restart else _load(checkpoint, config)
    if state is None:
        np.random.seed(config.seed)  # cma draws from numpy's global generator
        es = cma.CMAEvolutionStrategy(np.zeros(shape.nb_parameters), config.sigma,
                                      {"popsize": config.population, "seed": config.seed + 1, "verbose": -9})
        state = ESState(config, es, np.random.get_state(), workload_file=_file_of(config.workload))
    else:
        state.config = config
        if log is not None:
            log(f"resuming from {checkpoint} at generation {state.generation}")
    np.random.set_state(state.numpy_random)
    if progress is not None:
        progress.done = state.generation
        progress.start()
    try:
        while state.generation < config.generations:
            watch = Stopwatch()
            with watch:
                starts = _generation_starts(sequences, config, state.generation)
                for start in starts:
                    if start not in state.baseline:
                        state.baseline[start] = fcfs(sequences, start, config.backfill)
                        state.simulated_sequences += 1
                        state.simulated_jobs += sequences.length
                candidates = state.es.ask()
                fitness = [_fitness(protocol, shape.with_parameters(x), config, sequences, starts, state.baseline)
                           for x in candidates]
                state.es.tell(candidates, fitness)
                state.simulated_sequences += len(candidates) * len(starts)
                state.simulated_jobs += len(candidates) * len(starts) * sequences.length
                state.generation += 1
                state.history.append({"generation": state.generation, "best": float(min(fitness)),
                                      "mean": float(np.mean(fitness)), "median": float(np.median(fitness))})
                state.numpy_random = np.random.get_state()
            state.wall_time += watch.wall
            state.cpu_time += watch.cpu
            network = _network(shape, state, trace)
            network.save(output)
            _save(checkpoint, state)
            if progress is not None:
                progress.task_done(state.generation - 1)
            if log is not None:
                h = state.history[-1]
                log(f"generation {state.generation}/{config.generations}: fitness best {h['best']:+.4f} "
                    f"mean {h['mean']:+.4f} (log AVEbsld ratio to FCFS; 0 = FCFS)")
    finally:
        if progress is not None:
            progress.close()
    network = _network(shape, state, trace)
    network.save(output)
    return network


def _generation_starts(sequences, config: ESConfig, generation: int) -> list[int]:
    """The training sequences of a generation: a function of the seed and the generation only, so
    a resumed run draws the same ones."""
    rng = np.random.default_rng([config.seed, generation])
    return [sequences.sample_start(rng) for _ in range(config.sequences)]


def _fitness(protocol, network: ScoringNetwork, config: ESConfig, sequences, starts, baseline) -> float:
    total = 0.0
    for start in starts:
        bsld = protocol.network_score(network, sequences, start, config.backfill, config.tau)
        total += math.log(bsld / baseline[start])
    return total / len(starts)


def _network(shape: ScoringNetwork, state: ESState, trace) -> ScoringNetwork:
    """The network at the distribution's mean, with what it cost to train."""
    network = shape.with_parameters(state.es.result.xfavorite)
    network.machine_cores = trace.nb_cores
    config = asdict(state.config)
    network.metadata = {
        "algorithm": "cma-es", "trained_on": trace.name, "config": config,
        "generations": state.generation, "wall_time_s": round(state.wall_time, 1),
        "cpu_time_s": round(state.cpu_time, 1), "simulated_sequences": state.simulated_sequences,
        "simulated_jobs": state.simulated_jobs,
        "fitness": state.history[-1] if state.history else None,
        "fitness_meaning": "mean log(AVEbsld / AVEbsld of FCFS) over the generation's sequences (0 = FCFS)",
    }
    return network


def _save(path: Path, state: ESState) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        pickle.dump(state, out)
    os.replace(tmp, path)


def _load(path: Path, config: ESConfig) -> ESState | None:
    if not path.exists():
        return None
    try:
        with open(path, "rb") as source:
            state = pickle.load(source)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
        raise ValueError(f"{path}: not a readable train-policy checkpoint ({exc}); delete it or pass --restart") from None
    if not isinstance(state, ESState):
        raise ValueError(f"{path}: not a train-policy (es) checkpoint; delete it or pass --restart")
    # more generations resume and extend the run; the same trace may be named by another path
    same_workload = _same_workload(state, config.workload)
    if replace(state.config, generations=config.generations, workload=config.workload) != config or not same_workload:
        old, new = asdict(state.config), asdict(config)
        diff = ", ".join(f"{k}: {old[k]!r} -> {new[k]!r}" for k in new if old.get(k) != new[k]
                         and k != "generations" and (k != "workload" or not same_workload))
        raise ValueError(f"{path} was made with other settings ({diff}): run with those, or pass --restart "
                         "to start over")
    return state


def _file_of(workload: str) -> str | None:
    path = Path(workload)
    return str(path.resolve()) if path.is_file() else None


def _same_workload(state: ESState, workload: str) -> bool:
    """The checkpoint's trace: the same spec, or the same file by another path."""
    if state.config.workload == workload:
        return True
    made_on = getattr(state, "workload_file", None) or _file_of(state.config.workload)  # older checkpoints
    return made_on is not None and made_on == _file_of(workload)
