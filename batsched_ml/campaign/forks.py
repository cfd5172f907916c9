"""A campaign's ``[[forks]]``: what-if branches from the system states of a base run (issue 42).

A fork names a ``base`` config, snapshot ``instants`` (``at``: dates of the simulated trace, or
``every``: one each period up to the trace's last submission) and the ``branches`` (configs) to
run from each snapshot for a ``window``. Its task, one per (trace window, seed, instant), runs the
base config to the instant (paused there, ``Simulator.run(until=)``), snapshots it in memory,
forks each branch from that snapshot (``forking.fork``) until every job submitted in the window
has ended (``forking.run_window``), and compares the branches on the same jobs, paired, against
the ``reference`` branch (``analysis.forks``). Its cache key is the base run's inputs and
settings, the instant, the window and every branch's settings. ``forks.csv`` holds a line per
(fork, trace, window, seed, instant, branch); the report shows per instant each branch's
reduction with its job-bootstrap interval, and over the instants their mean with its bootstrap
interval.
"""

from __future__ import annotations

import csv
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .expand import CampaignError, as_table, check_keys

__all__ = ["FORK_KIND", "ForkSpec", "fork_section", "fork_specs", "fork_tasks", "run_fork_task", "write_forks"]

FORK_KIND = "fork"  # Task.kind of a fork's tasks (no plugin: the campaign runs them itself)
FORK_KEYS = ("name", "base", "at", "every", "window", "branches", "reference")
FORKS_CSV = "forks.csv"
COLUMNS = ("fork", "trace", "window", "seed", "at", "window_s", "branch", "reference", "jobs", "cum_bsld60",
           "mean_wait_h", "reduction", "reduction_low", "reduction_high")


@dataclass(frozen=True)
class ForkSpec:
    name: str
    base: str
    branches: tuple[str, ...]
    reference: str
    window: float              # simulated seconds
    at: tuple[float, ...] = ()  # instants (simulated seconds of the trace window)
    every: float | None = None  # or one every ``every`` seconds


def fork_specs(entries, configs: dict, problems, declared=()) -> list[ForkSpec]:
    """The ``[[forks]]`` entries checked against ``configs`` (name -> ConfigSpec); each problem
    goes to ``problems`` (a ``spec._Problems``), so that one run names them all. ``declared``: every
    config table's name (one that did not load has said why already)."""
    if not isinstance(entries, list):
        problems.found.append("[[forks]] must be an array of tables")
        return []
    specs = []
    for i, entry in enumerate(entries):
        at = f"[[forks]] #{i + 1}"
        entry = problems.check(as_table, entry, at)
        if entry is None:
            continue
        found = len(problems.found)
        problems.check(check_keys, entry, FORK_KEYS, at)
        spec = _fork(entry, at, configs, problems, i, set(declared))
        if spec is not None and len(problems.found) == found:
            specs.append(spec)
    names = [s.name for s in specs]
    problems.found += [f"[[forks]]: two forks are named {n!r}" for n in sorted({n for n in names if names.count(n) > 1})]
    return specs


def _fork(entry: dict, at: str, configs: dict, problems, i: int, declared: set) -> ForkSpec | None:
    def config(name, what):
        if isinstance(name, str) and name in declared and name not in configs:
            return None  # (its table's own problem is said)
        if not isinstance(name, str) or name not in configs:
            problems.found.append(f"{at}: {what} {name!r} is not a config; configs: {', '.join(declared)}")
            return None
        spec = configs[name]
        if spec.kind != "simulate":
            problems.found.append(f"{at}: {what} {name!r} is a {spec.kind} config; forks branch simulate configs")
        elif spec.batsim != 4:
            problems.found.append(f"{at}: {what} {name!r} runs on batsim = {spec.batsim}, whose kernel cannot pause "
                                  "or snapshot: forks are for Batsim 4.2.1 runs")
        return name

    base = None
    if "base" not in entry:
        problems.found.append(f"{at}: base is required (the config whose run is snapshotted)")
    else:
        base = config(entry["base"], "base")
    branches = entry.get("branches")
    if not isinstance(branches, list) or not branches:
        problems.found.append(f"{at}: branches must be a non-empty list of config names")
        branches = []
    branches = [config(b, "branch") for b in branches]
    reference = entry.get("reference", branches[0] if branches else None)
    if reference is not None and reference not in branches:
        problems.found.append(f"{at}: reference {reference!r} is not one of its branches")
    window = _positive(entry, "window", at, problems)
    if ("at" in entry) == ("every" in entry):
        problems.found.append(f"{at}: give the instants as one of at = [\"30d\", ...] or every = \"30d\"")
        instants, every = (), None
    elif "every" in entry:
        instants, every = (), _positive(entry, "every", at, problems)
    else:
        values = entry["at"] if isinstance(entry["at"], list) else [entry["at"]]
        every = None
        instants = tuple(sorted({v for v in (_duration(v, f"{at} at", problems) for v in values)
                                 if v is not None}))
    if window is None or base is None or None in branches or not branches:
        return None
    return ForkSpec(str(entry.get("name", f"fork{i + 1}")), base, tuple(branches), reference, window, instants, every)


def _positive(entry: dict, key: str, at: str, problems) -> float | None:
    if key not in entry:
        problems.found.append(f"{at}: {key} is required (a duration such as \"7d\")")
        return None
    return _duration(entry[key], f"{at} {key}", problems)


def _duration(value, where: str, problems) -> float | None:
    """``value`` in seconds (> 0), or None with the problem said."""
    from ..config.validate import ValidationError, duration

    try:
        return duration(value, where)
    except ValidationError as exc:
        problems.found.append(str(exc))
        return None


def _last_submission(workload) -> float:
    data = json.loads(Path(workload).read_text(encoding="utf-8"))
    return max((float(j["subtime"]) for j in data.get("jobs", [])), default=0.0)


def instants_of(fork: ForkSpec, workload) -> tuple[tuple[float, ...], list[str]]:
    """The fork's instants in a trace window (its workload file), and the problems: an instant at
    or past the window's last submission has nothing to branch."""
    last = _last_submission(workload)
    if fork.every is not None:
        return tuple(fork.every * k for k in range(1, int(last // fork.every) + 1) if fork.every * k < last), []
    late = [t for t in fork.at if t >= last]
    problems = [f"[[forks]] {fork.name}: instant {t / 86400:g} d ({t:.0f} s) is not before the trace's last "
                f"submission ({last / 86400:.2f} d)" for t in late]
    return tuple(t for t in fork.at if t < last), problems


def fork_tasks(campaign, results_dir, version: str, units: dict) -> list:
    """A task per (fork, trace, trace window, seed, instant); ``units``: ``build_tasks``' cut of each
    (trace, kind, unit key). Raises one :class:`CampaignError` naming every instant past its trace."""
    from .kinds import get_kind
    from .tasks import Task, task_key

    tasks, problems = [], []
    kind = get_kind("simulate")
    for fork in campaign.forks:
        base = campaign.configs[fork.base]
        for spec in campaign.traces.values():
            if not base.runs_on(spec.name):
                continue
            cut = (spec.name, kind.name, kind.unit_key(base.config))
            if cut not in units:
                units[cut] = kind.units(spec, base.config, Path(results_dir) / "inputs")
            for unit in units[cut]:
                instants, late = instants_of(fork, unit.inputs["workload"])
                problems += [f"{spec.name}: {p}" for p in late]
                for seed in campaign.seeds_of(fork.base):
                    settings = kind.with_seed(base.config, seed)
                    branches = {b: kind.with_seed(campaign.configs[b].config, seed) for b in fork.branches}
                    for at in instants:
                        key = task_key(unit.digest, settings, version, kind=FORK_KIND,
                                       needs={"at": at, "window": fork.window, "reference": fork.reference,
                                              "branches": {b: s.to_dict() for b, s in branches.items()}})
                        tasks.append(Task(trace=spec.name, window=unit.window, window_start=unit.window_start,
                                          config=fork.name, seed=seed, argv=base.argv, key=key,
                                          nb_jobs=unit.nb_jobs, timeout=campaign.task_timeout, settings=settings,
                                          kind=FORK_KIND, inputs={**unit.inputs, "at": at, "window": fork.window,
                                                                  "branches": branches,
                                                                  "reference": fork.reference}))
    if problems:
        raise CampaignError("; ".join(dict.fromkeys(problems)))
    return tasks


def run_fork_task(task) -> dict:
    """Run the base to the instant, fork each branch for the window, compare them (module docstring);
    past ``task.timeout`` (the campaign's ``task_timeout``): ``{"timeout": ...}`` as a simulate task."""
    from .tasks import TaskTimeout, deadline

    try:
        return _fork_task(task, deadline(task.timeout))
    except TaskTimeout as stop:
        return {"timeout": task.timeout, "finished": stop.finished, "total": stop.total}


def _fork_task(task, progress) -> dict:
    import warnings

    from ..analysis.forks import compare_branches, window_records
    from ..checkpointing import load_run
    from ..config.compose import build_scheduler
    from ..forking import fork, run_window
    from ..runner import in_process, load_inputs, prepare

    platform = task.inputs["platform"]
    workload = load_inputs(platform, [task.inputs["workload"]])[2][0][1]  # read once for the base and the branches
    at, end = task.inputs["at"], task.inputs["at"] + task.inputs["window"]
    records = {}
    with tempfile.TemporaryDirectory(prefix="batsched-fork-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim, core = prepare(platform, [workload], build_scheduler(task.settings), progress=progress)
        if sim.run(in_process(core), prefix=f"{tmp}/base", until=at) is not None:
            raise RuntimeError(f"the base run ended before the instant {at:g} s")
        snapshot = sim.snapshot()
        sim.close()
        for name, settings in task.inputs["branches"].items():
            prefix = f"{tmp}/{name}"
            branch = load_run(snapshot, platform, [workload], prefix=prefix, progress=progress)
            fork(branch, build_scheduler(settings))
            if run_window(branch, end) is None:
                branch.close()
            records[name] = window_records(f"{prefix}_jobs.csv", at, end)
    compared = compare_branches(records, task.inputs["reference"])
    row = {"fork": task.config, "trace": task.trace, "window": task.window, "seed": task.seed, "at": at,
           "window_s": task.inputs["window"], "reference": task.inputs["reference"], "jobs": compared["jobs"],
           "branches": compared["branches"], "key": task.key}
    return {"row": row, "files": {}}


def _identity(line) -> tuple:
    return (line["fork"], line["trace"], int(line["window"]), int(line["seed"]), float(line["at"]))


def write_forks(results_dir, campaign, tasks: list, done: dict) -> None:
    """``forks.csv``: a line per (fork, trace, window, seed, instant, branch) of the fork ``tasks``
    that are ``done`` (key -> row), and, as for results.csv, the earlier lines this run did not redo:
    of a (fork, trace) outside a subset run, or of one of its tasks that did not finish (Ctrl-C)."""
    mine = {_identity({"fork": t.config, "trace": t.trace, "window": t.window, "seed": t.seed,
                       "at": t.inputs["at"]}) for t in tasks}
    rows = [done[t.key] for t in tasks if t.key in done]
    finished = {_identity(row) for row in rows}
    ran = {(t.config, t.trace) for t in tasks}
    names = {f.name for f in campaign.forks}
    lines = [line for line in read_forks(results_dir) if line["fork"] in names and line["trace"] in campaign.traces
             and _identity(line) not in finished and ((line["fork"], line["trace"]) not in ran or _identity(line) in mine)]
    for row in rows:
        for branch, b in row["branches"].items():
            low_high = b["reduction"]
            lines.append({**{k: row[k] for k in ("fork", "trace", "window", "seed", "at", "window_s", "reference",
                                                  "jobs")},
                          "branch": branch, "cum_bsld60": b["cum_bsld60"], "mean_wait_h": b["mean_wait_h"],
                          "reduction": low_high[0], "reduction_low": low_high[1], "reduction_high": low_high[2]})
    if not lines:
        return
    lines.sort(key=lambda line: (line["fork"], line["trace"], int(line["window"]), int(line["seed"]), float(line["at"])))
    with open(Path(results_dir) / FORKS_CSV, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(lines)


def read_forks(results_dir) -> list[dict]:
    path = Path(results_dir) / FORKS_CSV
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _number(text: str) -> float | None:
    return None if text in ("", None) else float(text)


def _cell(estimate, low, high) -> str:
    if estimate is None:
        return "-"
    return f"{estimate:+.1f}% [{low:+.1f}, {high:+.1f}]" if low is not None else f"{estimate:+.1f}%"


def fork_section(results_dir) -> list[str]:
    """The report's "Forks" section: per fork, trace window and seed, a line per instant with each
    branch's cumulative-bsld reduction vs the reference on the same jobs (95% job-bootstrap
    interval), then the mean over the instants with its 95% bootstrap interval."""
    from ..analysis.uncertainty import mean_interval

    rows = read_forks(results_dir)
    if not rows:
        return []
    out = ["## Forks", "",
           "Branches from the base run's state at each instant, over the window, on the same jobs (submitted in "
           "the window, not started at the instant): reduction of the cumulative bsld (tau 60 s) vs the reference "
           "branch, 100 * (1 - branch / reference), with its 95% interval (jobs resampled, paired); last line: the "
           "mean over the instants with its 95% bootstrap interval.", ""]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["fork"], r["trace"], r["window"], r["seed"], r["reference"], r["window_s"]),
                          {}).setdefault(float(r["at"]), {})[r["branch"]] = r
    for (fork, trace, window, seed, reference, window_s), by_at in groups.items():
        branches = list(next(iter(by_at.values())))
        out += [f"### {fork}: {trace} (window {window}, seed {seed}), {float(window_s) / 86400:g}-day branches vs "
                f"{reference}", "", "| instant (day) | jobs | " + " | ".join(branches) + " |",
                "|---|---:|" + "---:|" * len(branches)]
        for at in sorted(by_at):
            cells = by_at[at]
            jobs = next(iter(cells.values()))["jobs"]
            out.append(f"| {at / 86400:g} | {jobs} | " + " | ".join(
                _cell(*(_number(cells[b][k]) for k in ("reduction", "reduction_low", "reduction_high")))
                if b in cells else "-" for b in branches) + " |")
        means = [mean_interval([_number(by_at[at][b]["reduction"]) for at in by_at if b in by_at[at]])
                 for b in branches]
        out += [f"| mean over {len(by_at)} | | " + " | ".join(_cell(m.estimate, m.low, m.high) for m in means) + " |",
                ""]
    return out
