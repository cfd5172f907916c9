"""``batsched-ml generate lublin`` and ``batsched-ml learn-policy`` (registered by ``batsched_ml.cli``)."""

from __future__ import annotations

from ..config import validate as check
from ..config.validate import arg



def cmd_generate(args) -> int:
    from ..workloads import write_platform, write_workload
    from ..workloads.lublin import generate_lublin

    workload = generate_lublin(args.cores, args.jobs, seed=args.seed)
    write_workload(workload, args.workload)
    if args.platform:
        write_platform(args.cores, args.platform)
    print(f"wrote {len(workload['jobs'])} Lublin-model jobs for {args.cores} cores (seed {args.seed}) to "
          f"{args.workload}" + (f", platform {args.platform}" if args.platform else ""))
    return 0


def cmd_learn_policy(args) -> int:
    from ..interrupts import keeping

    with keeping("nothing new was scored; run the same command again to resume"):  # (imports, reading the trace)
        return _learn_policy(args)


def _learn_policy(args) -> int:
    from .procedure import learn_policy

    for name in ("cores", "tuples", "trials", "top", "starts"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be >= 1")
    learn_policy(args.cores, args.tuples, args.trials, args.seed, args.output, scores=args.scores,
                 swf=args.swf, jobs=args.jobs, top=args.top, starts=args.starts, workers=args.workers,
                 bases=_names(args.bases), operators=_names(args.operators),
                 scheduler_address=args.dask, progress=not args.quiet,
                 log=lambda msg: print(msg, flush=True))
    return 0


def _names(text):
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else None


def add_learning_commands(sub) -> None:
    p = sub.add_parser("generate", help="generate a synthetic workload (model: lublin)")
    p.add_argument("model", choices=("lublin",), help="workload model: lublin (Lublin & Feitelson 2003)")
    p.add_argument("--cores", type=arg(check.positive_int, "--cores", integer=True), required=True, help="machine size (largest job)")
    p.add_argument("--jobs", type=arg(check.positive_int, "--jobs", integer=True), required=True, help="number of jobs")
    p.add_argument("--seed", type=arg(check.seed, "--seed", integer=True), default=0, help="random seed (default 0): same seed, same workload")
    p.add_argument("-w", "--workload", required=True, help="output Batsim JSON workload")
    p.add_argument("-p", "--platform", default=None, help="output SimGrid platform XML of --cores hosts")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("learn-policy", help="learn queue-order functions by trial simulations and "
                       "nonlinear regression (Carastan-Santos & de Camargo 2017)")
    p.add_argument("--cores", type=arg(check.positive_int, "--cores", integer=True), default=256, help="machine size n_max (default 256)")
    p.add_argument("--tuples", type=arg(check.positive_int, "--tuples", integer=True), required=True, help="number of (S, Q) tuples")
    p.add_argument("--trials", type=arg(check.positive_int, "--trials", integer=True), default=256000, help="permutations per tuple (default 256000)")
    p.add_argument("--seed", type=arg(check.seed, "--seed", integer=True), default=0, help="seed of the workload, the tuples and the permutations")
    p.add_argument("-o", "--output", required=True, help="JSON policy file (use as --policy learned:FILE#k)")
    p.add_argument("--scores", default=None, help="score distribution CSV, kept for resuming "
                   "(default: OUTPUT with .scores.csv)")
    p.add_argument("--swf", default=None, help="draw tuples from this trace instead of the Lublin model")
    p.add_argument("--jobs", type=arg(check.positive_int, "--jobs", integer=True), default=10000, help="Lublin jobs to draw tuples from (default 10000)")
    p.add_argument("--top", type=arg(check.positive_int, "--top", integer=True), default=10, help="functions kept in the policy file (default 10)")
    p.add_argument("--starts", type=arg(check.positive_int, "--starts", integer=True), default=3, help="least-squares starting points per function (default 3)")
    p.add_argument("--bases", default=None, help="base functions to combine, comma-separated "
                   "(default all: id,log10,sqrt,inv)")
    p.add_argument("--operators", default=None, help="operators, comma-separated (default all: +,*,/)")
    p.add_argument("--workers", type=arg(check.non_negative_int, "--workers", integer=True), default=None, help="local worker processes (default: one per core)")
    p.add_argument("--dask", default=None, metavar="ADDRESS", help="run on this Dask scheduler instead")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_learn_policy)


__all__ = ["add_learning_commands"]
