"""The ``batsched-ml`` argument parser: every command's flags and one-line help, usage errors on one
line (exit 2), defaults shown in ``--help``. The campaign, learning and RL commands register their
own sub-parsers (``campaign.cli``, ``learning.cli``, ``rl.cli``)."""

from __future__ import annotations

import argparse

from .. import __version__
from ..config import validate as check
from ..config.validate import arg
from .commands import (cmd_check, cmd_convert, cmd_metrics, cmd_plot, cmd_plugins, cmd_presets, cmd_serve,
                       cmd_simulate)


def _scheduler_arguments(parser: argparse.ArgumentParser) -> None:
    """The scheduler flags of ``simulate`` and ``serve``: every field of ``config.declare.RunConfig``."""
    from ..config.declare import add_arguments

    add_arguments(parser.add_argument_group("scheduler"))


def _checkpoint_arguments(group) -> None:
    """``simulate``'s snapshot flags: checkpoints, pausing, resuming and forking a run."""
    sim_time = check.duration_arg("--checkpoint-every", "simulated time between two snapshots")
    group.add_argument("--checkpoint-every", type=sim_time, default=None, metavar="DURATION",
                       help="write a snapshot every DURATION of simulated time (e.g. 7d, 12h, 3600); by "
                       "default only when SIGINT / SIGTERM stops the run")
    group.add_argument("--checkpoint-every-wall", type=check.duration_arg("--checkpoint-every-wall",
                                                                          "wall-clock time between two snapshots"),
                       default=None, metavar="DURATION", help="write a snapshot every DURATION of wall-clock time "
                       "(e.g. 10min)")
    group.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                       help="folder of the snapshots (default: PREFIX_checkpoints beside the outputs)")
    group.add_argument("--checkpoint-keep", type=arg(check.positive_int, "--checkpoint-keep", integer=True),
                       default=None, metavar="K", help="keep the K latest snapshots (default 3)")
    group.add_argument("--stop-at", type=check.duration_arg("--stop-at", "simulated date to pause at", zero=True),
                       default=None, metavar="TIME", help="pause at simulated date TIME (e.g. 300d): a snapshot "
                       "is written there and the outputs hold the jobs ended so far")
    group.add_argument("--resume", default=None, metavar="SNAPSHOT",
                       help="continue the run of SNAPSHOT where it stopped: outputs byte-identical to the run "
                       "never interrupted (refused if its inputs, configuration or batsched-ml changed)")
    group.add_argument("--fork", default=None, metavar="SNAPSHOT",
                       help="start a new run from SNAPSHOT's system state (time, running and queued jobs, jobs "
                       "to come) under the scheduler flags given")
    group.add_argument("--fork-window", type=check.duration_arg("--fork-window", "simulated time a fork runs"),
                       default=None, metavar="DURATION", help="with --fork: stop once every job waiting at the "
                       "snapshot or submitted within DURATION after it has ended (e.g. 7d)")


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
        """``batsched-ml: error: ...`` as every other error (the README's promise), naming the
        (sub)command whose help to read."""
        program = self.prog.split()[0]
        self.exit(2, f"{program}: error: {message} (see: {self.prog} --help)\n")

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
    p.add_argument("--batsim", type=int, choices=(4, 5), default=4,
                   help="the Batsim line of the workload: 4 (4.2.1: delay profiles) or 5 (DelayProfile, and each "
                   "job's user in its extra_data, the only job member Batsim 5 forwards to the scheduler)")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("simulate", help="run a scheduler in the embedded Batsim-faithful simulator")
    p.add_argument("-p", "--platform", default=None, help="SimGrid platform XML (required, but with --resume / "
                   "--fork, whose snapshot names it)")
    p.add_argument("-w", "--workload", default=None, action="append",
                   help="Batsim workload (repeatable; required, but with --resume / --fork)")
    p.add_argument("-e", "--export", default=None,
                   help="output prefix, as Batsim takes it: Batsim 4.2.1 writes PREFIX_jobs.csv (default out/out), "
                   "Batsim 5 PREFIXjobs.csv (default out/, as rc2); with --resume, the run's own")
    p.add_argument("--batsim", type=int, choices=(4, 5), default=4,
                   help="the Batsim line to behave like: 4 (4.2.1, the default until Batsim 5.0 is final) or 5 "
                   "(5.0.0-rc2: its timing, its workloads (DelayProfile; a 4.2.1 workload is read as its Batsim 5 "
                   "conversion) and its outputs: jobs.csv, schedule.json; with --connect, batprotocol JSON to the "
                   "scheduler: init frame, its hello asks for the features, no --enable-dynamic-jobs)")
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
    _checkpoint_arguments(p.add_argument_group("checkpoints (snapshots of the whole run: docs/snapshots.md)"))
    _scheduler_arguments(p)
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("serve", help="serve scheduling decisions to a real Batsim over ZeroMQ (REP)")
    p.add_argument("-s", "--socket", default="tcp://127.0.0.1:28000", help="endpoint to bind")
    p.add_argument("--timeout", type=arg(check.timeout, "--timeout"), default=None, metavar="SECONDS",
                   help="exit with an error when Batsim sends nothing for this long (default: wait forever)")
    p.add_argument("--log", default=None, metavar="FILE", help="write every message exchanged to FILE")
    p.add_argument("--batsim", choices=("4", "5"), default=None,
                   help="which Batsim connects: 4 (4.2.1, JSON messages, batsim -s ENDPOINT) or 5 (batprotocol "
                   "JSON, batsim --edc-socket-str ENDPOINT INIT); default: recognised by Batsim's first message")
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

    p = sub.add_parser("plot", help="figures of runs from their jobs CSVs")
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

    p = sub.add_parser("presets", help="list the named configurations of --preset: what each expands to, its "
                       "source (paper and table, or the results file that measured it) and what changed")
    p.set_defaults(func=cmd_presets)

    from ..campaign.cli import add_campaign_commands

    add_campaign_commands(sub)
    from ..learning.cli import add_learning_commands

    add_learning_commands(sub)
    from ..rl.cli import add_rl_commands

    add_rl_commands(sub)
    return parser
