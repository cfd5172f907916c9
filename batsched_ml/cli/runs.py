"""How ``simulate`` starts an in-process run (issue 42): afresh, or from a snapshot, resumed
(``--resume``: the same run, byte-identical to it never interrupted; anything that would make it
another run is refused in one line) or forked (``--fork``: another configuration from the
snapshot's system state). Each gives a ``PlannedRun``: the simulator to run or resume, its
decision core and scheduler, and the checkpointing watch, which writes a snapshot on SIGINT /
SIGTERM in every case and more with ``--checkpoint-every`` / ``--checkpoint-every-wall``.

A fork's outputs start as the snapshot's run's jobs file up to the snapshot (the jobs that had
ended are there as they ended); ``--fork-window D`` stops the branch once every job submitted
before the snapshot's date + D has ended."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..config import validate as check

DEFAULT_PREFIX = "out/out"
CHECKPOINT_FLAGS = ("checkpoint_every", "checkpoint_every_wall", "checkpoint_dir", "checkpoint_keep", "stop_at",
                    "resume", "fork", "fork_window")


@dataclass
class PlannedRun:
    """An in-process run ready to go: ``start(on_start)`` runs it to its end (the result) or to
    ``--stop-at`` (None)."""

    sim: object          # simulator.engine.Simulator
    core: object         # core.decision_core.DecisionCore
    scheduler: object    # the Scheduler whose report and per-job tables the CLI writes
    config: object       # config.RunConfig
    prefix: str
    watch: object        # checkpointing.Checkpointer
    description: dict    # what PREFIX_run.json gets besides the configuration (resumptions, fork)
    platform: str
    workloads: list
    resumed: bool = False
    window_end: float | None = None  # a fork's: stop once every job submitted before it has ended

    def watching(self):
        """The watch's signal handlers while the run goes (none without a watch: Batsim 5)."""
        from contextlib import nullcontext

        return nullcontext() if self.watch is None else self.watch.watching()

    def start(self, on_start):
        if self.sim.paused:
            on_start()
            if self.window_end is not None:
                from ..forking import run_window

                self.watch.pause_snapshots = False
                return run_window(self.sim, self.window_end, self.watch)
            return self.sim.resume(watch=self.watch)
        from ..runner import transport

        return self.sim.run(transport(self.sim, self.core), prefix=self.prefix, on_start=on_start, watch=self.watch)


def plan(args, progress, line) -> PlannedRun:
    """The run ``simulate``'s flags describe (not ``--connect``), under Batsim ``line``."""
    if line.major != 4:
        given = [f"--{name.replace('_', '-')}" for name in CHECKPOINT_FLAGS if getattr(args, name, None) is not None]
        if given:
            from ..simulator.engine import NOT_PAUSABLE

            raise check.ValidationError(f"{given[0]}: " + NOT_PAUSABLE.format(line=line.name))
        return _fresh(args, progress, line)
    if args.resume and args.fork:
        raise check.ValidationError("--resume continues a run, --fork branches from one: give one of them")
    if args.resume:
        return _resumed(args, progress)
    if args.fork:
        return _forked(args, progress)
    return _fresh(args, progress)


def require_inputs(args) -> None:
    """-p and -w are required unless a snapshot gives them."""
    missing = [flag for flag, value in (("-p/--platform", args.platform), ("-w/--workload", args.workload))
               if not value]
    if missing:
        args.command_parser.error(f"the following arguments are required: {', '.join(missing)} (or --resume "
                                  "SNAPSHOT / --fork SNAPSHOT, whose run names them)")


def run_config(args):
    """The run configuration the flags describe, validated against the plugins (``config.resolve``)."""
    from ..config.resolve import resolve
    from ..config.declare import RunConfig

    if hasattr(args, "export"):  # plot, campaign and learn-policy take -o OUTPUT: in simulate that is -e
        for item in args.option or []:
            if "=" not in item:
                raise check.ValidationError(f"-o expects KEY=VALUE (a plugin option), got {item!r}; to set "
                                            f"the output prefix use -e/--export, e.g. -e {item}")
    return resolve(RunConfig.from_args(args))


def _policy(args, prefix, recorded: dict | None = None):
    """The checkpoint policy: the flags, else the snapshot's (a resumed run goes on the same way)."""
    from ..checkpointing import DEFAULT_KEEP, CheckpointPolicy, checkpoint_dir

    recorded = recorded or {}
    directory = args.checkpoint_dir or recorded.get("directory") or str(checkpoint_dir(prefix))
    every = args.checkpoint_every if args.checkpoint_every is not None else recorded.get("every")
    wall = args.checkpoint_every_wall if args.checkpoint_every_wall is not None else recorded.get("every_wall")
    keep = args.checkpoint_keep if args.checkpoint_keep is not None else recorded.get("keep", DEFAULT_KEEP)
    return CheckpointPolicy(str(directory), every, wall, keep)


def identity_of(config, platform, workloads, dynamic_jobs, prefix) -> dict:
    """A run's identity as its snapshots record it, with the paths as the user typed them."""
    from ..checkpointing import run_identity

    identity = run_identity(config, platform, workloads, dynamic_jobs=dynamic_jobs)
    identity["given"] = {"platform": str(platform), "workloads": [str(w) for w in workloads], "export": str(prefix)}
    return identity


def _lazy(make):
    """``make()`` computed at the first snapshot only (digests of the inputs: not for a run never snapshotted)."""
    box = []

    def describe():
        if not box:
            box.append(make())
        return box[0]
    return describe


def _fresh(args, progress, line=None) -> PlannedRun:
    from ..checkpointing import Checkpointer
    from ..config.compose import build_scheduler
    from ..runner import prepare

    require_inputs(args)
    config = run_config(args)
    scheduler = build_scheduler(config)
    prefix = args.export or DEFAULT_PREFIX
    check.output_prefix(prefix, separator="_" if line is None else line.file_separator)
    sim, core = prepare(args.platform, args.workload, scheduler, dynamic_jobs=args.dynamic_jobs, progress=progress,
                        batsim=4 if line is None else line)
    if line is not None and line.major != 4:  # its kernel cannot pause: no snapshot, even on a signal
        watch = None
    else:
        describe = _lazy(lambda: identity_of(config, args.platform, args.workload, args.dynamic_jobs, prefix))
        watch = Checkpointer(_policy(args, prefix), describe, until=args.stop_at)
    return PlannedRun(sim, core, scheduler, config, prefix, watch, {}, args.platform, args.workload)


def scheduler_flags_given(args) -> bool:
    from ..config.declare import settings

    return bool(getattr(args, "option", None)) or any(getattr(args, name, None) not in (None, False)
                                                       for name in settings())


def load_snapshot(path):
    """A snapshot file, checked (signature first), with the run it records."""
    from ..snapshot_files import Snapshot, SnapshotError

    snapshot = Snapshot.load(path)
    if not isinstance(snapshot.header.get("run"), dict):
        raise SnapshotError(f"{path} was not written by simulate (it records no run): load it with "
                            "Simulator.from_snapshot")
    return snapshot


def recorded_config(run: dict):
    from ..config.declare import RunConfig

    values = dict(run["config"])
    options = values.get("options") or {}
    order = [k for k in run.get("options_order", ()) if k in options]
    values["options"] = {**{k: options[k] for k in order}, **options}  # as given (the label lists them so)
    return RunConfig(**values)


def inputs_for(args, run: dict) -> tuple:
    """The platform and workloads to load a snapshot's run with: the flags', else those it recorded."""
    from ..checkpointing import recorded_inputs
    from ..snapshot_files import SnapshotError

    recorded_platform, recorded_workloads = recorded_inputs({"run": run})
    platform = args.platform or recorded_platform
    workloads = args.workload or recorded_workloads
    for path in [platform, *workloads]:
        if isinstance(path, str) and not Path(path).exists():
            raise SnapshotError(f"{path}, an input of the snapshot's run, is missing: give it with "
                                f"{'-p' if path == platform else '-w'} (its content must be the same)")
    return platform, workloads


def _resumed(args, progress) -> PlannedRun:
    from ..checkpointing import Checkpointer, differences, load_run
    from ..config.resolve import resolve
    from ..snapshot_files import SnapshotError

    snapshot = load_snapshot(args.resume)
    run = snapshot.header["run"]
    config = recorded_config(run)
    if scheduler_flags_given(args):
        config = run_config(args)
    else:
        config = resolve(config)
    platform, workloads = inputs_for(args, run)
    dynamic_jobs = run.get("dynamic_jobs") if args.dynamic_jobs is None else args.dynamic_jobs
    current = identity_of(config, platform, workloads, dynamic_jobs, args.export or run["given"]["export"])
    found = differences(run, current)
    if dynamic_jobs != run.get("dynamic_jobs"):
        found.append(f"--enable-dynamic-jobs {run.get('dynamic_jobs')} -> {dynamic_jobs}")
    if found:
        raise SnapshotError(f"cannot resume {args.resume}: {'; '.join(found)} (a resumed run is the same run; "
                            f"to branch from it with another configuration use --fork {args.resume})")
    prefix = args.export or run["given"]["export"]
    sim = load_run(snapshot, platform, workloads, prefix=prefix, progress=progress)
    current["given"] = dict(run["given"], export=prefix)  # the paths as first typed: PREFIX_run.json keeps them
    watch = Checkpointer(_policy(args, prefix, snapshot.header.get("checkpoints")), lambda: current,
                         start=snapshot.sim_time, until=args.stop_at)
    description = {"resumed": {"snapshot": str(args.resume), "sim_time": snapshot.sim_time}}
    if "fork" in run:  # a fork's snapshot: the run goes on as that fork
        current["fork"] = run["fork"]
        description["fork"] = run["fork"]
    core = sim.scheduler.core
    given = run["given"]
    planned = PlannedRun(sim, core, core.scheduler, config, prefix, watch, description, given["platform"],
                         given["workloads"], resumed=True)
    window = run.get("fork", {}).get("window")
    if window is not None and args.stop_at is None:
        planned.window_end = run["fork"]["at"] + window
    return planned


def _forked(args, progress) -> PlannedRun:
    """``--fork``: the snapshot's run loaded with its inputs (checked against the digests it recorded), its
    scheduler replaced by the one the flags describe; a line per component on stderr says what it took
    over or why it starts fresh (also in PREFIX_run.json under ``fork``). The outputs start as the
    snapshot's run's jobs file up to the snapshot."""
    from ..checkpointing import Checkpointer, differences, load_run
    from ..config.compose import build_scheduler
    from ..forking import fork
    from ..snapshot_files import SnapshotError

    if args.stop_at is not None and args.fork_window is not None:
        raise check.ValidationError("--stop-at and --fork-window both say where the fork stops: give one")
    snapshot = load_snapshot(args.fork)
    run = snapshot.header["run"]
    prefix = args.export or DEFAULT_PREFIX
    if prefix == run["given"]["export"]:
        raise check.ValidationError(f"-e {prefix} is the prefix of the snapshot's run: a fork writes its own "
                                    "outputs (give another -e)")
    check.output_prefix(prefix)
    config = run_config(args)
    scheduler = build_scheduler(config)
    platform, workloads = inputs_for(args, run)
    dynamic_jobs = run.get("dynamic_jobs")
    current = identity_of(config, platform, workloads, dynamic_jobs, prefix)
    changed = [d for d in differences(run, current) if d.startswith(("batsched-ml", "platform", "workload", "1 ",
                                                                      "2 ", "3 "))]
    if changed:
        raise SnapshotError(f"cannot fork {args.fork}: {'; '.join(changed)} (a fork goes on from the snapshot's "
                            "system state, with its code and inputs)")
    sim = load_run(snapshot, platform, workloads, prefix=prefix, progress=progress)
    core, said = fork(sim, scheduler)
    for component, text in said.items():
        print(f"batsched-ml: fork: {component} {text}", file=sys.stderr)
    at = snapshot.sim_time
    current["given"] = dict(run["given"], export=prefix)
    current["fork"] = {"snapshot": str(args.fork), "at": at, "window": args.fork_window, "from": run["label"],
                       "components": said}
    watch = Checkpointer(_policy(args, prefix), lambda: current, start=at, until=args.stop_at)
    planned = PlannedRun(sim, core, scheduler, config, prefix, watch, {"fork": current["fork"]},
                         run["given"]["platform"], run["given"]["workloads"])
    if args.fork_window is not None:
        planned.window_end = at + args.fork_window
    return planned
