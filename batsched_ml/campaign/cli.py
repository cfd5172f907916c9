"""``batsched-ml campaign run | report | check`` (registered by ``batsched_ml.cli``)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path


def cmd_run(args) -> int:
    from ..interrupts import keeping

    with keeping("every task finished so far is kept in the results directory's cache; "
                 "run the same command again to resume"):  # stopped before the tasks were known
        return _run(args)


def _run(args) -> int:
    from ..interrupts import keeping, note_kept
    from .run import run_campaign
    from .spec import load_campaign

    campaign = load_campaign(args.file, traces_dir=args.traces_dir)
    results_dir = Path(args.output or Path("results") / campaign.name)
    if args.workers is not None and args.workers < 0:
        raise ValueError("--workers must be >= 0")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.trace or args.config:
        campaign.subset(traces=args.trace, configs=args.config)  # unknown names: an error before any work
    with _cluster(args, log) as address:
        outcome = run_campaign(campaign, results_dir, workers=args.workers, scheduler_address=address,
                               progress=not args.quiet, log=log, traces=args.trace, configs=args.config)
    if outcome.interrupted:  # Ctrl-C or SIGTERM: one line (cli.main), what was kept, exit 130 / 143
        kept = (f"{outcome.stored} of {outcome.tasks} tasks stored in {results_dir / 'results.csv'}"
                if outcome.tasks else f"nothing was run yet in {results_dir}")
        raise note_kept(outcome.stopped_by, f"{kept}; run the same command again to resume") from None
    log(f"{outcome.computed} computed, {outcome.cached} cached, {len(outcome.failed)} failed or timed out: "
        f"{results_dir / 'results.csv'}")
    for line in not_completed_warning(outcome.rows):
        log(line)
    if not args.no_report and outcome.rows:
        import time

        from .report import write_report

        log(f"writing the report in {results_dir / 'report'} (tables and figures of {len(outcome.rows)} runs)...")
        started = time.monotonic()
        with keeping(f"{outcome.stored} of {outcome.tasks} tasks stored in {results_dir / 'results.csv'}, "
                     "the report unfinished; run the same command again to resume"):
            report = write_report(results_dir, results_dir / "report", log=log)
        log(f"report: {report} (written in {time.monotonic() - started:.1f} s)")
    if outcome.failed:
        log(f"{len(outcome.failed)} task(s) failed or timed out:")
        for line in outcome.failed:
            log(f"  {line}")
        return 1
    return 0


def not_completed_warning(rows, first: int = 3) -> list[str]:
    """One ``warning:`` line when runs left jobs out of their metrics (rejected, killed and not
    requeued, never started), naming the first ``first`` of them."""
    from .results import RAN, jobs_not_completed

    found = [(r, gone) for r in rows if r["status"] in RAN and (gone := jobs_not_completed(r))]
    if not found:
        return []
    named = "; ".join(f"{r['trace']}/w{r['window']}/{r['config']}/s{r['seed']}: "
                      + ", ".join(f"{n:,} of {r['jobs']:,} jobs {kind}" for kind, n in gone.items())
                      for r, gone in found[:first])
    more = f"; and {len(found) - first} more" if len(found) > first else ""
    ran = sum(r["status"] in RAN for r in rows)
    return [f"batsched-ml: warning: {len(found)} of {ran} runs did not complete every job, their metrics cover the "
            f"jobs that ran: {named}{more} (results.csv: complete, rejected, killed, unfinished)"]


@contextmanager
def _cluster(args, log):
    """The Dask scheduler's address: ``--dask``, a Slurm cluster started for the run (``--slurm``),
    or None (a local cluster)."""
    if args.slurm is None:
        yield args.dask
        return
    if args.dask or args.workers is not None:
        raise ValueError("--slurm starts its own Dask workers: drop --dask and --workers")
    if args.slurm < 1:
        raise ValueError("--slurm expects a number of Slurm jobs >= 1")
    from .slurm import slurm_cluster

    with slurm_cluster(args.slurm, log=log) as address:
        yield address


def cmd_report(args) -> int:
    from .report import write_report

    path = write_report(args.results_dir, args.output or Path(args.results_dir) / "report",
                        log=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(f"wrote {path}")
    return 0


def cmd_check(args) -> int:
    from .spec import load_campaign

    c = load_campaign(args.file, traces_dir=args.traces_dir)
    if args.trace:
        c = c.subset(traces=args.trace)
    c.require_inputs()
    windows = {n: (t.windows.count or "all") if t.windows else t.jitter.copies if t.jitter else 1
               for n, t in c.traces.items()}
    from .kinds import get_kind

    trainings = f", {len(c.trainings)} training(s)" if c.trainings else ""
    print(f"campaign {c.name}: {len(c.traces)} trace(s) {windows}, {len(c.configs)} config(s){trainings}, "
          f"seeds {c.seeds}, baseline {c.baseline}")
    for training in c.trainings.values():
        print(f"  train {training.name} (seeds {', '.join(map(str, training.seeds))}; on {', '.join(training.traces)}): "
              f"{get_kind(training.kind).command} {training.command}")
    for config in c.configs.values():
        on = f" (on {', '.join(config.traces)})" if config.traces is not None else ""
        print(f"  {config.name}{on}: {get_kind(config.kind).command} ... {config.command}")
    for fork in c.forks:
        when = f"every {fork.every / 86400:g} d" if fork.every else "at " + ", ".join(f"{t / 86400:g} d" for t in fork.at)
        print(f"  fork {fork.name}: {fork.base} {when}, {fork.window / 86400:g}-day branches {', '.join(fork.branches)} "
              f"vs {fork.reference}")
    return 0


def add_campaign_commands(sub) -> None:
    """Register ``campaign`` and its sub-commands on the top-level subparsers."""
    from ..config.validate import arg, non_negative_int

    p = sub.add_parser("campaign", help="traces x configs x seeds as a TOML file, run on Dask, cached "
                                        "(docs/campaigns.md)")
    csub = p.add_subparsers(dest="campaign_command", required=True)
    r = csub.add_parser("run", help="run (or resume) a campaign, then write its report")
    r.add_argument("file", help="campaign TOML file")
    r.add_argument("-o", "--output", default=None, metavar="RESULTS_DIR",
                   help="results directory (default results/<campaign name>)")
    r.add_argument("--workers", type=arg(non_negative_int, "--workers", integer=True), default=None,
                   help="local worker processes (default: one per core; 0: run in this process)")
    r.add_argument("--dask", default=None, metavar="ADDRESS",
                   help="submit to a running Dask scheduler, e.g. tcp://head:8786, instead of a local cluster")
    r.add_argument("--slurm", type=arg(non_negative_int, "--slurm", integer=True), default=None, metavar="JOBS",
                   help="run the workers as JOBS Slurm jobs (dask-jobqueue; what each job asks for is in its "
                        "configuration, jobqueue.slurm: docs/campaigns.md)")
    r.add_argument("--trace", action="append", default=None, metavar="NAME",
                   help="run only this trace (repeatable; the other tasks' rows of results.csv are kept)")
    r.add_argument("--config", action="append", default=None, metavar="NAME",
                   help="run only this config (repeatable; the baseline is always kept)")
    r.add_argument("--traces-dir", default=None, metavar="DIR",
                   help="where trace files given by a bare name are (default $BATSCHED_ML_TRACES, else next to "
                        "the campaign file)")
    r.add_argument("--no-report", action="store_true", help="skip RESULTS_DIR/report")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_run)
    r = csub.add_parser("report", help="Markdown report and figures of a results directory")
    r.add_argument("results_dir", help="a directory written by campaign run")
    r.add_argument("-o", "--output", default=None, metavar="REPORT_DIR", help="default RESULTS_DIR/report")
    r.set_defaults(func=cmd_report)
    r = csub.add_parser("check", help="validate a campaign file (its traces' files too) and print each config's "
                                      "simulate flags")
    r.add_argument("file", help="campaign TOML file")
    r.add_argument("--traces-dir", default=None, metavar="DIR", help="as for campaign run")
    r.add_argument("--trace", action="append", default=None, metavar="NAME",
                   help="check only this trace's files (repeatable)")
    r.set_defaults(func=cmd_check)
