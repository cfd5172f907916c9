"""Command-line front end: ``batsched-ml COMMAND``; the commands and their one-line help are in
:func:`build_parser` (``batsched-ml --help`` lists them all)."""

from __future__ import annotations

import argparse
import json
import sys

from . import __version__, interrupts
from . import validation as check
from .validation import arg


def _scheduler_arguments(parser: argparse.ArgumentParser) -> None:
    """The scheduler flags of ``simulate`` and ``serve``: every field of ``config.RunConfig``."""
    from .config import add_arguments

    add_arguments(parser.add_argument_group("scheduler"))


def run_config(args):
    """The run configuration the flags describe, validated against the plugins (``compose.resolve``)."""
    from .compose import resolve
    from .config import RunConfig

    if hasattr(args, "export"):  # plot, campaign and learn-policy take -o OUTPUT: in simulate that is -e
        for item in args.option or []:
            if "=" not in item:
                raise check.ValidationError(f"-o expects KEY=VALUE (a plugin option), got {item!r}; to set "
                                            f"the output prefix use -e/--export, e.g. -e {item}")
    return resolve(RunConfig.from_args(args))


# ------------------------------------------------------------------ commands
def cmd_convert(args) -> int:
    from .workloads import convert_swf

    report = convert_swf(args.trace, args.workload, args.platform, max_jobs=args.max_jobs, nodes=args.nodes,
                         missing_walltime=args.missing_walltime, allow_empty=args.allow_empty)
    print(report)
    for warning in report.all_warnings():
        print(f"batsched-ml: warning: {warning}", file=sys.stderr)
    return 0


def _stop_status(exc) -> str:
    """How a run that raised ``exc`` ended, for PREFIX_run.json."""
    from . import run_outputs

    if isinstance(exc, interrupts.Terminated):
        return run_outputs.TERMINATED
    return run_outputs.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else run_outputs.FAILED


def cmd_simulate(args) -> int:
    from .analysis import compute_metrics, format_metrics
    from .compose import build_scheduler
    from .progress import ProgressReporter
    from .run_outputs import (COMPLETE, complete_report, mark_run, rejection_summary, run_description_path,
                              write_job_details, write_run_description)
    from .runner import simulate

    _warn_deprecated_dynamic_jobs(args)
    if args.connect:
        _refuse_scheduler_flags(args)
    else:
        config = run_config(args)
        scheduler = build_scheduler(config)
    details, rejected = {}, []
    progress = ProgressReporter.for_cli(getattr(args, "quiet", False))
    try:
        if args.connect:
            from .server.peer import simulate_connected

            result = simulate_connected(args, progress=progress)
            report = {}
        else:

            def describe_run():  # once the inputs are read and the CSVs open: never left alone
                details["run"] = run_description_path(args.export)  # marked below, however we stop
                write_run_description(config, args.export, args.platform, args.workload)

            result, core = simulate(args.platform, args.workload, scheduler, prefix=args.export,
                                    progress=progress, dynamic_jobs=args.dynamic_jobs, on_start=describe_run)
            report = scheduler.report()
            details.update(write_job_details(scheduler, args.export))
            rejected = core.rejected
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
        return interrupts.report(exc)
    finally:
        progress.close()
    metrics = compute_metrics(result.jobs_csv, nb_cores=result.schedule.get("nb_computing_machines"))
    report = complete_report(report, metrics)
    files = {"jobs": result.jobs_csv, "schedule": result.schedule_csv, **details}
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
    for line in rejection_summary(rejected):
        print(line, file=sys.stderr)
    if result.nb_jobs == 0:
        print("batsched-ml: warning: the workload has no job: nothing was simulated", file=sys.stderr)
    if result.unfinished:
        print(f"warning: {len(result.unfinished)} jobs never ran (the scheduler left them waiting)",
              file=sys.stderr)
        return 3
    return 0


def _refuse_scheduler_flags(args) -> None:
    """With ``--connect`` the scheduler is the external one: a scheduler flag would be ignored."""
    from .config import settings

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


def cmd_serve(args) -> int:
    from .compose import build_scheduler
    from .server.serve import serve

    config = run_config(args)
    return serve(args, build_scheduler(config), label=config.label())


def _warn_if_partial(*jobs_csvs) -> None:
    """One ``warning:`` line on stderr for each jobs CSV whose run did not reach its end."""
    from .run_outputs import partial_run_warning

    for path in jobs_csvs:
        warning = partial_run_warning(path)
        if warning:
            print(f"batsched-ml: warning: {warning}", file=sys.stderr)


def cmd_metrics(args) -> int:
    from .analysis import compute_metrics, format_metrics

    from .analysis.metrics import read_jobs_csv
    from .analysis.uncertainty import run_figures

    _warn_if_partial(args.jobs_csv)
    table = read_jobs_csv(args.jobs_csv)
    metrics = compute_metrics(table, taus=tuple(args.tau), nb_cores=args.nb_cores)
    # how much the figures rest on which jobs the trace holds: job-bootstrap 95% intervals, worst 1%
    metrics.update(run_figures(table, tuple(args.tau)))
    print(json.dumps(metrics, sort_keys=True) if args.json else format_metrics(metrics))
    return 0


def cmd_plot(args) -> int:
    from .analysis.plots import plot_runs

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
    from .analysis.checker import check_files, violation_lines

    nb_cores = args.nb_cores
    if args.platform is not None:
        from .workloads import read_platform

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


def cmd_plugins(args) -> int:
    from .options import describe_plugins

    for line in describe_plugins():
        print(line)
    return 0


# ------------------------------------------------------------------- parser
class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Shows each option's default, unless its help already names one or there is none to show."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        shown = not (default is None or default is False or default == [] or default == argparse.SUPPRESS)
        if "default" not in text and shown and action.option_strings and action.nargs != 0:
            text += f" (default: {action.default})"
        return text


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse with every usage error on one line (exit 2) and defaults in ``--help``."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        """Also records, as ``command_parser``, the innermost (sub)command's parser: the one whose
        help an unrecognized argument should point to (argparse reports those at the top)."""
        namespace, extras = super().parse_known_args(args, namespace)
        if getattr(namespace, "command_parser", None) is None:
            namespace.command_parser = self
        return namespace, extras

    def parse_args(self, args=None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            namespace.command_parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace


DESCRIPTION = """\
Batch schedulers for Batsim (FCFS, EASY, conservative and probabilistic backfilling, runtime
predictors, job classifiers), run in an embedded Batsim-faithful simulator or served to a real Batsim."""

FIRST_STEPS = """\
first steps (from the repository):
  batsched-ml simulate -p platforms/cluster-100.xml -w workloads/KTH-SP2-1k.json -e out/kth1k
  batsched-ml metrics out/kth1k_jobs.csv
each command's options: batsched-ml COMMAND --help"""


class _TopHelpFormatter(argparse.RawDescriptionHelpFormatter, DefaultsHelpFormatter):
    """The top-level help keeps the line breaks of its description and first steps."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="batsched-ml", description=DESCRIPTION, epilog=FIRST_STEPS,
                                formatter_class=_TopHelpFormatter)
    parser.add_argument("--version", action="version", version=f"batsched-ml {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    p = sub.add_parser("convert", help="convert an SWF trace into a Batsim workload and platform")
    p.add_argument("trace", help="SWF file (plain or .gz)")
    p.add_argument("-w", "--workload", required=True, help="output Batsim JSON workload (.json or .json.gz)")
    p.add_argument("-p", "--platform", default=None, help="output SimGrid platform XML")
    p.add_argument("--max-jobs", type=arg(check.positive_int, "--max-jobs", integer=True), default=None,
                   help="keep only the first N usable jobs (default: all)")
    p.add_argument("--nodes", type=arg(check.machine_size, "--nodes", integer=True), default=None,
                   help="machine size (default: the header's MaxProcs)")
    p.add_argument("--missing-walltime", choices=("runtime", "max", "drop"), default="runtime",
                   help="walltime of a job without a requested time: its run time (default, as the golden "
                   "files; backfilling then knows its run time exactly), the trace's largest requested "
                   "time, or drop the job")
    p.add_argument("--allow-empty", action="store_true",
                   help="write the workload even when no job of the trace is usable (default: an error, exit 2)")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("simulate", help="run a scheduler in the embedded Batsim-faithful simulator")
    p.add_argument("-p", "--platform", required=True, help="SimGrid platform XML")
    p.add_argument("-w", "--workload", required=True, action="append", help="Batsim workload (repeatable)")
    p.add_argument("-e", "--export", default="out/out", help="output prefix (default out/out)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object (summary figures; "
                   "per-job detail goes to PREFIX_classes.csv / PREFIX_predictions.csv, named under 'files')")
    p.add_argument("--quiet", action="store_true",
                   help="no progress (by default: a bar on a terminal, else a status line on stderr every 30 s "
                   "once a run lasts 5 s)")
    p.add_argument("--connect", default=None, metavar="ENDPOINT",
                   help="drive an external scheduler over ZeroMQ (REQ) like Batsim does, e.g. tcp://127.0.0.1:28000")
    p.add_argument("--timeout", type=arg(check.timeout, "--timeout"), default=None, metavar="SECONDS",
                   help="with --connect: give up when the scheduler does not answer in time")
    p.add_argument("--enable-dynamic-jobs", dest="dynamic_jobs", action="store_const", const=True, default=None,
                   help="Batsim's flag: the scheduler may register jobs (REGISTER_JOB) and must then send "
                        "NOTIFY registration_finished. Default: off with --connect, as in Batsim; in-process, "
                        "on only when the scheduler requeues jobs")
    p.add_argument("--no-dynamic-jobs", dest="dynamic_jobs", action="store_const", const=False,
                   help=argparse.SUPPRESS)  # deprecated: dynamic jobs are off by default since Batsim's flag
    _scheduler_arguments(p)
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("serve", help="serve scheduling decisions to a real Batsim over ZeroMQ (REP)")
    p.add_argument("-s", "--socket", default="tcp://127.0.0.1:28000", help="endpoint to bind")
    p.add_argument("--timeout", type=arg(check.timeout, "--timeout"), default=None, metavar="SECONDS",
                   help="exit with an error when Batsim sends nothing for this long (default: wait forever)")
    p.add_argument("--log", default=None, metavar="FILE", help="write every message exchanged to FILE")
    _scheduler_arguments(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("metrics", help="metrics of a Batsim jobs CSV (ours or real Batsim's), with 95%% "
                       "job-bootstrap intervals of AVEbsld and the cumulative bsld and the worst 1%% share")
    p.add_argument("jobs_csv", help="a Batsim jobs file (PREFIX_jobs.csv), written by simulate or by Batsim")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    p.add_argument("--tau", type=arg(check.tau, "--tau"), action="append", default=None,
                   help="bounded-slowdown threshold in seconds (repeatable; default 10 and 60)")
    p.add_argument("--nb-cores", type=arg(check.positive_int, "--nb-cores", integer=True), default=None,
                   help="machine size, for utilisation (default: the largest core id used + 1)")
    p.set_defaults(func=cmd_metrics)

    p = sub.add_parser("plot", help="figures of runs from their jobs CSVs (needs the 'plots' extra)")
    p.add_argument("jobs_csv", nargs="+", help="one or more PREFIX_jobs.csv files, one curve each")
    p.add_argument("-o", "--output", required=True, help="image file (format from the suffix: .png, .pdf, .svg)")
    p.add_argument("--kind", choices=("cumbsld", "wait-ecdf"), default="cumbsld",
                   help="cumbsld: cumulative bounded slowdown over time (Zrigui et al. Fig. 6, default); "
                   "wait-ecdf: distribution of waiting times")
    p.add_argument("--tau", type=arg(check.tau, "--tau"), default=60.0,
                   help="bounded-slowdown threshold for cumbsld, in seconds (> 0)")
    p.add_argument("--label", action="append", default=None,
                   help="curve label, once per CSV (default: the run's scheduler/policy/predictor from "
                   "PREFIX_run.json, else the prefix)")
    p.add_argument("--title", default=None, help="figure title (default: none)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("check", help="check a run's jobs CSV (ours or real Batsim's): every job ends once, "
                       "no core overlap, no start before submission, no job left waiting on an idle machine; "
                       "exit 1 if anything is wrong")
    p.add_argument("jobs_csv", help="the run's PREFIX_jobs.csv (plain or gzip)")
    p.add_argument("-w", "--workload", action="append", default=[],
                   help="the run's workload file(s), in order: every job must then appear, and delay "
                   "profiles check execution times (repeatable)")
    p.add_argument("-p", "--platform", default=None, help="the run's platform: allocations must fit it")
    p.add_argument("--nb-cores", type=int, default=None, help="machine size, instead of --platform")
    p.add_argument("--idle-slack", type=float, default=1.0, metavar="SECONDS",
                   help="how long a job may wait on a fully idle machine (message latencies; default 1)")
    p.add_argument("--fcfs-head", action="store_true",
                   help="also require the first job in submission order to start once it fits (needs the "
                   "machine size; for fcfs/easy runs with --policy fcfs)")
    p.add_argument("--json", action="store_true", help="print the violations as one JSON list")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("plugins", help="list every plugin by kind, with its -o options and their defaults")
    p.set_defaults(func=cmd_plugins)

    from .campaign.cli import add_campaign_commands

    add_campaign_commands(sub)
    from .learning.cli import add_learning_commands

    add_learning_commands(sub)
    from .rl.cli import add_rl_commands

    add_rl_commands(sub)
    return parser


def _stdout_closed() -> bool:
    """Whether whoever read our standard output has gone (``| head``): poll reports an error on
    a pipe without a reader. A broken pipe elsewhere (a worker, a socket) stays an error."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (Windows), stdout replaced (tests)
        return True


def _quiet_end_of_pipe() -> int:
    """``batsched-ml ... | head`` is a normal end: exit 0, nothing more on the closed pipe (its
    last flush at exit would fail again)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass
    return 0


def main(argv=None) -> int:
    """Run one command; ``argv`` None: the program's own (then an interrupted run ends the process
    as soon as its line is printed, instead of seconds of interpreter teardown)."""
    # SIGTERM (a batch system's stop, `timeout`) ends every command like Ctrl-C: one line, what was
    # kept, exit 143 (130 for Ctrl-C), at any moment of the run; the same signal again is ignored
    restore = interrupts.signals_raise_once()
    interrupted = False
    try:
        code = _run_command(argv)
    except KeyboardInterrupt as exc:
        code, interrupted = interrupts.report(exc), True
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        code = _quiet_end_of_pipe()
    except Exception as exc:  # an error that an interrupt caused (an interrupted import) is that interrupt
        stop = interrupts.interrupt_behind(exc)
        if stop is None:
            raise
        code, interrupted = interrupts.report(stop), True
    finally:
        restore()
    return interrupts.finish(code, at_once=interrupted and argv is None)


NOTHING_STARTED = "stopped before the command started; run the same command again"


def _run_command(argv) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except SystemExit:
        sys.stdout.flush()  # --help into a closed pipe: told here, not at exit
        raise
    except KeyboardInterrupt as exc:
        raise interrupts.note_kept(exc, NOTHING_STARTED) from None
    if getattr(args, "tau", "unset") is None:
        args.tau = [10.0, 60.0]
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe is found here, within the handlers below
        return code
    except BrokenPipeError:
        raise
    except Exception as exc:
        from .errors import USER_ERRORS  # here, not at start-up: it imports every module with errors

        if not isinstance(exc, USER_ERRORS):
            raise
        partial = getattr(exc, "partial_outputs", None)
        kept = f" ({partial.describe()})" if partial is not None else ""
        print(f"batsched-ml: error: {exc}{kept}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
