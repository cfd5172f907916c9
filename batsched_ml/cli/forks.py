"""``simulate --fork SNAPSHOT [scheduler flags]``: a new run from a snapshot's system state (issue 42).

The run of the snapshot is loaded with its inputs (checked against the digests it recorded), its
scheduler replaced by the one the flags describe (``forking.fork``), and one line per component
says on stderr what it took over or why it starts fresh (also in ``PREFIX_run.json``, under
``fork``). The outputs start as the snapshot's run's jobs file up to the snapshot: the jobs that
had ended are there as they ended. ``--fork-window D`` stops the branch once every job submitted
before the snapshot's date + D has ended."""

from __future__ import annotations

import sys

from .. import validation as check
from .runs import (DEFAULT_PREFIX, PlannedRun, _policy, identity_of, inputs_for, load_snapshot)


def forked(args, progress) -> PlannedRun:
    from ..checkpointing import Checkpointer, differences, load_run
    from ..compose import build_scheduler
    from ..forking import fork
    from ..snapshot_files import SnapshotError
    from .commands import run_config

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
