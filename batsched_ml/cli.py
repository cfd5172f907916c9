"""Command-line front end: ``batsched-ml convert | simulate | serve | metrics | plugins``."""

from __future__ import annotations

import argparse
import json
import sys

from . import __version__


def _scheduler_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by ``simulate`` and ``serve``: they choose one scheduler."""
    g = parser.add_argument_group("scheduler")
    g.add_argument("--scheduler", default="easy", help="backfilling family: fcfs, easy, conservative (default easy)")
    g.add_argument("--policy", default="fcfs", help="queue order: fcfs spf saf wfp3 unicef f1..f4 (default fcfs)")
    g.add_argument("--reservations", choices=("count", "cores"), default="count",
                   help="reservation model: count = textbook (papers), cores = batsched's (default count)")
    g.add_argument("--backfill-order", choices=("queue", "sjbf"), default="queue",
                   help="order in which backfilling tries jobs (default: the queue order)")
    g.add_argument("--starvation-threshold", type=float, default=None, metavar="SECONDS",
                   help="a job that waited longer than this moves to the head of the queue")
    g.add_argument("--predictor", default=None, help="runtime predictor plugin (requested, clairvoyant, ave2, eloss)")
    g.add_argument("--correction", default=None, help="correction when a job outlives its estimate "
                   "(requested, incremental, doubling)")
    g.add_argument("--correction-timing", choices=("immediate", "next-event"), default="immediate",
                   help="when a correction takes effect: immediate (CALL_ME_LATER at the predicted end, "
                   "queue re-planned then; default) or next-event (at the next submission or completion, "
                   "as in Gaussier et al.'s simulator)")
    g.add_argument("--classifier", default=None, help="small/large classifier plugin (random-forest, ...)")
    g.add_argument("--kill-false-small", action="store_true",
                   help="kill a job classified small at the divider and requeue it as large")
    g.add_argument("--seed", type=int, default=0, help="seed of every random component (default 0)")
    g.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="extra plugin option (repeatable); VALUE is parsed as JSON when possible")


def plugin_options(args) -> dict:
    """The ``-o KEY=VALUE`` options of ``args`` as a dict (VALUE parsed as JSON when possible)."""
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"error: -o expects KEY=VALUE, got {item!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def scheduler_from_args(args):
    """Build the scheduler object the flags describe (used by simulate and serve)."""
    from .runner import build_scheduler

    return build_scheduler(
        args.scheduler, policy=args.policy, reservations=args.reservations,
        backfill_order=args.backfill_order, starvation_threshold=args.starvation_threshold,
        predictor=args.predictor, correction=args.correction, correction_timing=args.correction_timing,
        classifier=args.classifier,
        kill_false_small=args.kill_false_small, seed=args.seed, **plugin_options(args))


# ------------------------------------------------------------------ commands
def cmd_convert(args) -> int:
    from .workloads import convert_swf

    report = convert_swf(args.trace, args.workload, args.platform, max_jobs=args.max_jobs, nodes=args.nodes)
    print(report)
    return 0


def _progress_bar(enabled: bool):
    if not enabled:
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=0, unit="job", desc="simulating", leave=False)

    def update(done, total):
        bar.total = total
        bar.n = done
        bar.refresh()

    return update, bar


def cmd_simulate(args) -> int:
    from .analysis import compute_metrics, format_metrics
    from .runner import simulate

    if args.connect:
        from .server.peer import simulate_connected

        result = simulate_connected(args)
        report = {}
    else:
        scheduler = scheduler_from_args(args)
        update, bar = _progress_bar(sys.stderr.isatty() and not args.json)
        try:
            result, core = simulate(args.platform, args.workload, scheduler, prefix=args.export, progress=update)
        finally:
            if bar is not None:
                bar.close()
        report = scheduler.report()
    metrics = compute_metrics(result.jobs_csv, nb_cores=result.schedule.get("nb_computing_machines"))
    if args.json:
        out = {"metrics": metrics, "simulation": {"wall_time": result.wall_time, "messages": result.messages,
                                                   "jobs_csv": result.jobs_csv,
                                                   "unfinished": result.unfinished}}
        if report:
            out["scheduler"] = report
        print(json.dumps(out, sort_keys=True, default=float))
    else:
        print(format_metrics(metrics))
        print(f"outputs: {result.jobs_csv}, {result.schedule_csv} ({result.wall_time:.2f} s)")
        for key, value in report.items():
            if not isinstance(value, (list, dict)):
                print(f"{key}: {value}")
    if result.unfinished:
        print(f"warning: {len(result.unfinished)} jobs never ran (the scheduler left them waiting)",
              file=sys.stderr)
        return 3
    return 0


def cmd_serve(args) -> int:
    from .server.serve import serve

    return serve(args, scheduler_from_args(args))


def cmd_metrics(args) -> int:
    from .analysis import compute_metrics, format_metrics

    metrics = compute_metrics(args.jobs_csv, taus=tuple(args.tau), nb_cores=args.nb_cores)
    print(json.dumps(metrics, sort_keys=True) if args.json else format_metrics(metrics))
    return 0


def cmd_plot(args) -> int:
    from .analysis.plots import plot_runs

    plot_runs(args.jobs_csv, args.output, kind=args.kind, tau=args.tau, labels=args.label, title=args.title)
    print(f"wrote {args.output}")
    return 0


def cmd_check(args) -> int:
    from .analysis.checker import check_files

    nb_cores = args.nb_cores
    if args.platform is not None:
        from .workloads import read_platform

        nb_cores = read_platform(args.platform).nb_hosts
    violations = check_files(args.jobs_csv, args.workload, nb_cores, idle_slack=args.idle_slack,
                             fcfs_head=args.fcfs_head)
    if args.json:
        print(json.dumps([{"kind": v.kind, "job": v.job, "message": v.message} for v in violations]))
    else:
        for v in violations:
            print(v)
        print(f"{len(violations)} violation(s)" if violations else "valid: no violation found")
    return 1 if violations else 0


def cmd_plugins(args) -> int:
    from .plugins import GROUPS, available

    for kind in GROUPS:
        print(f"{kind}:")
        for name, target in available(kind).items():
            print(f"  {name:<22} {target}")
    return 0


# ------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batsched-ml", description=__doc__)
    parser.add_argument("--version", action="version", version=f"batsched-ml {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("convert", help="convert an SWF trace into a Batsim workload and platform")
    p.add_argument("trace", help="SWF file (plain or .gz)")
    p.add_argument("-w", "--workload", required=True, help="output Batsim JSON workload (.json or .json.gz)")
    p.add_argument("-p", "--platform", default=None, help="output SimGrid platform XML")
    p.add_argument("--max-jobs", type=int, default=None, help="keep only the first N usable jobs")
    p.add_argument("--nodes", type=int, default=None, help="machine size (default: the header's MaxProcs)")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("simulate", help="run a scheduler in the embedded Batsim-faithful simulator")
    p.add_argument("-p", "--platform", required=True, help="SimGrid platform XML")
    p.add_argument("-w", "--workload", required=True, action="append", help="Batsim workload (repeatable)")
    p.add_argument("-e", "--export", default="out/out", help="output prefix (default out/out)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    p.add_argument("--connect", default=None, metavar="ENDPOINT",
                   help="drive an external scheduler over ZeroMQ (REQ) like Batsim does, e.g. tcp://127.0.0.1:28000")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="with --connect: give up when the scheduler does not answer in time")
    p.add_argument("--no-dynamic-jobs", dest="dynamic_jobs", action="store_false",
                   help="with --connect: like Batsim without --enable-dynamic-jobs (for schedulers that "
                        "never send NOTIFY registration_finished, e.g. pybatsim)")
    _scheduler_arguments(p)
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("serve", help="serve scheduling decisions to a real Batsim over ZeroMQ (REP)")
    p.add_argument("-s", "--socket", default="tcp://127.0.0.1:28000", help="endpoint to bind")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="exit with an error when Batsim sends nothing for this long (default: wait forever)")
    p.add_argument("--log", default=None, metavar="FILE", help="write every message exchanged to FILE")
    _scheduler_arguments(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("metrics", help="metrics of a Batsim jobs CSV (ours or real Batsim's)")
    p.add_argument("jobs_csv")
    p.add_argument("--json", action="store_true")
    p.add_argument("--tau", type=float, action="append", default=None,
                   help="bounded-slowdown threshold in seconds (repeatable; default 10 and 60)")
    p.add_argument("--nb-cores", type=int, default=None, help="machine size, for utilisation")
    p.set_defaults(func=cmd_metrics)

    p = sub.add_parser("plot", help="figures of runs from their jobs CSVs (needs the 'plots' extra)")
    p.add_argument("jobs_csv", nargs="+", help="one or more PREFIX_jobs.csv files, one curve each")
    p.add_argument("-o", "--output", required=True, help="image file (format from the suffix: .png, .pdf, .svg)")
    p.add_argument("--kind", choices=("cumbsld", "wait-ecdf"), default="cumbsld",
                   help="cumbsld: cumulative bounded slowdown over time (Zrigui et al. Fig. 6, default); "
                   "wait-ecdf: distribution of waiting times")
    p.add_argument("--tau", type=float, default=60.0, help="bounded-slowdown threshold for cumbsld (default 60)")
    p.add_argument("--label", action="append", default=None, help="curve label, once per CSV (default: the prefix)")
    p.add_argument("--title", default=None)
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("check", help="check a run's jobs CSV (ours or real Batsim's): every job ends once, "
                       "no core overlap, no start before submission, no job left waiting on an idle machine; "
                       "exit 1 if anything is wrong")
    p.add_argument("jobs_csv")
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

    p = sub.add_parser("plugins", help="list every plugin by kind")
    p.set_defaults(func=cmd_plugins)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "tau", "unset") is None:
        args.tau = [10.0, 60.0]
    from .errors import USER_ERRORS

    try:
        return args.func(args)
    except USER_ERRORS as exc:
        print(f"batsched-ml: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
