"""What each of the core commands does (``simulate``, ``serve``, ``convert``, ``metrics``, ``plot``,
``check``, ``plugins``), given its parsed arguments; their flags are in ``cli.parser``."""

from __future__ import annotations

import json
import sys

from .. import interrupts
from .runs import run_config


def cmd_convert(args) -> int:
    from ..workloads import convert_swf

    report = convert_swf(args.trace, args.workload, args.platform, max_jobs=args.max_jobs, nodes=args.nodes,
                         missing_walltime=args.missing_walltime, allow_empty=args.allow_empty,
                         batsim=args.batsim)
    print(report)
    for warning in report.all_warnings():
        print(f"batsched-ml: warning: {warning}", file=sys.stderr)
    return 0


def _stop_status(exc) -> str:
    """How a run that raised ``exc`` ended, for PREFIX_run.json."""
    from .. import run_outputs

    if isinstance(exc, interrupts.Terminated):
        return run_outputs.TERMINATED
    return run_outputs.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else run_outputs.FAILED


def cmd_simulate(args) -> int:
    from ..analysis import compute_metrics, format_metrics
    from ..progress import ProgressReporter
    from ..run_outputs import (COMPLETE, PAUSED, WINDOW, complete_report, mark_run, rejection_summary,
                               run_description_path, write_connected_description, write_job_details)
    from ..simulator.lines import line_of
    from .runs import plan, require_inputs

    _warn_deprecated_dynamic_jobs(args)
    line = line_of(getattr(args, "batsim", 4))
    if getattr(args, "export", None) is None and not getattr(args, "resume", None):  # (a resumed run: its own)
        args.export = DEFAULT_EXPORT[line.major]
    if line.major == 5:
        _check_batsim5_flags(args)
    if args.connect:
        _refuse_scheduler_flags(args)
        require_inputs(args)
    details, rejected = {}, []
    progress = ProgressReporter.for_cli(getattr(args, "quiet", False))
    run = None
    separator = line.file_separator
    try:
        if args.connect:
            from ..server.peer import simulate_connected

            def describe_connected():
                details["run"] = run_description_path(args.export, separator)  # marked below, however we stop
                write_connected_description(args.connect, args.export, args.platform, args.workload,
                                            bool(args.dynamic_jobs), line.name, separator)

            result = simulate_connected(args, progress=progress, on_start=describe_connected)
            report = {}
        else:
            run = plan(args, progress, line)

            def describe_run():  # once the inputs are read and the CSVs open: never left alone
                details["run"] = run_description_path(run.prefix, separator)  # marked below, however we stop
                _describe_run(run, line)

            with run.watching():
                result = run.start(describe_run)
            if result is None:  # --stop-at (paused, its snapshot written) or a fork's window over
                partial = run.sim.close()
                mark_run(details["run"], PAUSED if run.window_end is None else WINDOW, partial)
                return _paused(run, partial)
            report = run.scheduler.report()
            details.update(write_job_details(run.scheduler, run.prefix, separator))
            rejected = run.core.rejected
        mark_run(details["run"], COMPLETE)
    except BaseException as exc:
        if "run" in details:
            try:
                mark_run(details["run"], _stop_status(exc), getattr(exc, "partial_outputs", None))
            except (OSError, ValueError):  # keep the original error
                pass
        if not isinstance(exc, KeyboardInterrupt):
            raise
        # Ctrl-C or SIGTERM (see main): the outputs were finished, unless none had been started
        if not args.connect and "run" not in details and getattr(exc, "partial_outputs", None) is None:
            print(f"batsched-ml: {interrupts.what_stopped(exc)} before the simulation started: nothing was "
                  "written", file=sys.stderr)
            return interrupts.exit_code(exc)
        snapshot = getattr(exc, "snapshot", None)
        partial = getattr(exc, "partial_outputs", None)
        if snapshot is not None and partial is not None:
            interrupts.note_kept(exc, f"{partial.describe()}; snapshot {snapshot}; resume with: "
                                 f"batsched-ml simulate --resume {snapshot}")
        return interrupts.report(exc)
    finally:
        progress.close()
    metrics = compute_metrics(result.jobs_csv, nb_cores=result.schedule.get("nb_computing_machines"))
    report = complete_report(report, metrics)
    files = {"jobs": result.jobs_csv, "schedule": result.schedule_file, **details}
    if line.major == 5:  # rc2's third file
        files["real_exec_info"] = line.output(args.export, "real_exec_info.json")
    if args.json:
        out = {"metrics": metrics, "simulation": {"wall_time": result.wall_time, "messages": result.messages,
                                                   "jobs_csv": result.jobs_csv,
                                                   "unfinished": result.unfinished},
               "files": files}
        if report:
            out["scheduler"] = report
        print(json.dumps(out, sort_keys=True, default=float))
    else:
        print(format_metrics(metrics))
        print(f"outputs: {', '.join(files.values())} (simulation wall time {result.wall_time:.2f} s)")
        for key, value in report.items():
            if not isinstance(value, (list, dict)):
                print(f"{key}: {value}")
    for text in rejection_summary(rejected, reasons_in_csv=line.major == 4):
        print(text, file=sys.stderr)
    if result.nb_jobs == 0:
        print("batsched-ml: warning: the workload has no job: nothing was simulated", file=sys.stderr)
    if result.unfinished:
        print(f"warning: {len(result.unfinished)} jobs never ran (the scheduler left them waiting)",
              file=sys.stderr)
        return 3
    return 0


def _describe_run(run, line) -> None:
    """Write PREFIX_run.json of ``run`` (a ``runs.PlannedRun``): its configuration and inputs as
    typed, the Batsim line, and how it started (resumed from a snapshot, forked)."""
    from ..run_outputs import record_resumption, run_description_path, write_run_description

    path = run_description_path(run.prefix, line.file_separator)
    previous = record_resumption(path) if run.resumed else []
    write_run_description(run.config, run.prefix, run.platform, run.workloads, line.name, line.file_separator,
                          extra=dict(run.description, **({"resumed": previous + [run.description["resumed"]]}
                                                          if run.resumed else {})))


def _paused(run, partial) -> int:
    """``--stop-at``: the outputs as far as known, and the snapshot that continues the run; a fork's
    window: the outputs hold its jobs."""
    if run.window_end is not None:
        print(f"batsched-ml: fork window over (every job submitted before simulated time {run.window_end:.0f} s "
              f"ended): {partial.describe()}", file=sys.stderr)
        return 0
    snapshot = run.watch.written[-1] if run.watch.written else None
    print(f"batsched-ml: paused (--stop-at): {partial.describe()}; snapshot {snapshot}; resume with: "
          f"batsched-ml simulate --resume {snapshot}", file=sys.stderr)
    return 0


DEFAULT_EXPORT = {4: "out/out", 5: "out/"}  # -e's default: ours for 4.2.1 (out/out_jobs.csv), rc2's for 5


def _refuse_scheduler_flags(args) -> None:
    """With ``--connect`` the scheduler is the external one: a scheduler flag would be ignored."""
    from ..config.declare import settings
    from .runs import CHECKPOINT_FLAGS

    for name in CHECKPOINT_FLAGS:
        if getattr(args, name, None) is not None:
            raise ValueError(f"--{name.replace('_', '-')} needs the scheduler in this process: with --connect the "
                             f"scheduler's state is in another process (at {args.connect}), which no snapshot "
                             "holds")
    for name, spec in settings().items():
        if getattr(args, name, None) not in (None, False):
            raise ValueError(f"{spec.flag} configures the in-process scheduler; with --connect the scheduler is "
                             f"the one at {args.connect} (give it its flags: batsched-ml serve ... {spec.flag} ...)")
    if getattr(args, "option", None):
        raise ValueError(f"-o configures the in-process scheduler; with --connect the scheduler is the one at "
                         f"{args.connect}")


def _warn_deprecated_dynamic_jobs(args) -> None:
    if getattr(args, "dynamic_jobs", None) is False:
        print("batsched-ml: warning: --no-dynamic-jobs is deprecated: dynamic jobs are off unless "
              "--enable-dynamic-jobs is given, as in Batsim", file=sys.stderr)


def _check_batsim5_flags(args) -> None:
    """``simulate --batsim 5``: Batsim 5 has no dynamic-jobs flag (the scheduler asks for dynamic
    registration in its hello; in-process, when it requeues)."""
    if args.dynamic_jobs is not None:
        raise ValueError("--enable-dynamic-jobs is a Batsim 4.2.1 flag: under --batsim 5 the scheduler asks for "
                         "dynamic registration in its hello (in-process: when it kills and requeues)")


def cmd_serve(args) -> int:
    from ..config.compose import build_scheduler
    from ..config.resolve import run_label
    from ..server.serve import serve

    config = run_config(args)
    return serve(args, build_scheduler(config), label=run_label(config))


def _warn_if_partial(*jobs_csvs) -> None:
    """One ``warning:`` line on stderr for each jobs CSV whose run did not reach its end."""
    from ..run_outputs import partial_run_warning

    for path in jobs_csvs:
        warning = partial_run_warning(path)
        if warning:
            print(f"batsched-ml: warning: {warning}", file=sys.stderr)


def cmd_metrics(args) -> int:
    from ..analysis import compute_metrics, format_metrics

    from ..analysis.metrics import read_jobs_csv
    from ..analysis.uncertainty import run_figures

    _warn_if_partial(args.jobs_csv)
    table = read_jobs_csv(args.jobs_csv)
    _refuse_inconsistent(table, args.jobs_csv)
    metrics = compute_metrics(table, taus=tuple(args.tau), nb_cores=args.nb_cores)
    # how much the figures rest on which jobs the trace holds: job-bootstrap 95% intervals, worst 1%
    metrics.update(run_figures(table, tuple(args.tau)))
    print(json.dumps(metrics, sort_keys=True) if args.json else format_metrics(metrics))
    return 0


def _refuse_inconsistent(table, path) -> None:
    """Figures of a file that is no schedule (a start before its submission...) would be wrong or NaN."""
    from ..analysis.checker import inconsistencies

    problems = inconsistencies(table)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValueError(f"{path} is not a valid schedule: {problems[0]}{more}; `batsched-ml check {path}` "
                         "lists every problem")


def cmd_plot(args) -> int:
    from ..analysis.plots import plot_runs

    import warnings

    _warn_if_partial(*args.jobs_csv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plot_runs(args.jobs_csv, args.output, kind=args.kind, tau=args.tau, labels=args.label, title=args.title)
    for w in caught:
        print(f"batsched-ml: warning: {w.message}", file=sys.stderr)
    print(f"wrote {args.output}")
    return 0


def cmd_check(args) -> int:
    from ..analysis.checker import check_files, violation_lines

    nb_cores = args.nb_cores
    if args.platform is not None:
        from ..workloads import read_platform

        nb_cores = read_platform(args.platform).nb_hosts
    _warn_if_partial(args.jobs_csv)
    violations = check_files(args.jobs_csv, args.workload, nb_cores, idle_slack=args.idle_slack,
                             fcfs_head=args.fcfs_head)
    if args.json:
        print(json.dumps([{"kind": v.kind, "job": v.job, "message": v.message} for v in violations]))
    else:
        for line in violation_lines(violations):
            print(line)
        print(f"{len(violations)} violation(s)" if violations else "valid: no violation found")
    return 1 if violations else 0


def cmd_presets(args) -> int:
    from ..config.declare import RunConfig
    from ..config.presets import PRESETS

    for preset in PRESETS.values():
        flags = " ".join(RunConfig(**preset.values()).argv())
        print(f"{preset.name} (v{preset.version}): {preset.summary}")
        print(f"  expands to: {flags}")
        print(f"  source: {preset.source}")
        for change in preset.changes:
            print(f"  changed: {change}")
    return 0


def cmd_plugins(args) -> int:
    from ..config.resolve import describe_plugins

    for line in describe_plugins():
        print(line)
    return 0
