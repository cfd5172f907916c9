"""``batsched-ml train-policy`` and ``evaluate-policy`` (registered by ``batsched_ml.cli``): train a
scoring network on job sequences of a trace and write it as a ``--policy rl:FILE`` file; score orders
and policy files on a protocol's evaluation sequences (``protocols``)."""

from __future__ import annotations

import sys

from ..config import validate as check
from ..config.validate import arg

__all__ = ["add_rl_commands"]


def _start_range(text: str) -> tuple:
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise check.ValidationError(f"--start-range expects LO,HI (fractions of the trace), got {text!r}") from None
    if not 0.0 <= lo < hi <= 1.0:
        raise check.ValidationError(f"--start-range must satisfy 0 <= LO < HI <= 1, got {text!r}")
    return (lo, hi)


def _hidden(text: str) -> tuple:
    try:
        widths = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise check.ValidationError(f"--hidden expects layer widths like 8 or 16,8, got {text!r}") from None
    if not widths or any(w < 1 for w in widths):
        raise check.ValidationError(f"--hidden expects positive layer widths like 8 or 16,8, got {text!r}")
    return widths


def cmd_train_policy(args) -> int:
    from ..interrupts import note_kept

    try:
        return _train(args)
    except KeyboardInterrupt as exc:
        if getattr(exc, "kept", None) is None:
            from .es import checkpoint_path

            ckpt = args.checkpoint or checkpoint_path(args.output)
            note_kept(exc, f"the generations finished so far are in {ckpt} and the policy of the last one in "
                      f"{args.output} (if any finished); run the same command again to resume")
        raise


# The flags of one algorithm (a flag of the other is refused, never ignored) and their defaults.
ALGORITHM_FLAGS = {"es": {"generations": 30, "population": 8, "sequences": 4, "sigma": 0.5},
                   "ppo": {"timesteps": 100_000, "window": 128, "reward": "bsld-step", "envs": 1}}


def _algorithm_flags(args) -> None:
    for algorithm, flags in ALGORITHM_FLAGS.items():
        for name, default in flags.items():
            if getattr(args, name) is None:
                setattr(args, name, default)
            elif algorithm != args.algorithm:
                raise check.ValidationError(f"--{name} is a flag of --algorithm {algorithm}, not of "
                                            f"--algorithm {args.algorithm}")


def _train(args) -> int:
    from ..progress import TaskProgress

    from .protocols import get_protocol

    _algorithm_flags(args)
    get_protocol(args.protocol).check_backfill(args.backfill)
    if args.start_range is None:  # ours holds the last 20% back; theirs trains where it evaluates, as they did
        args.start_range = (0.0, 0.8) if args.protocol == "batsched-ml" else (0.0, 1.0)
    nb_cores = _cores(args)
    if args.algorithm == "ppo":
        from .ppo import PPOConfig, train_ppo

        config = PPOConfig(workload=args.workload, nb_cores=nb_cores, backfill=args.backfill,
                           sequence_length=args.sequence_length, start_range=args.start_range,
                           hidden=args.hidden, timesteps=args.timesteps, window=args.window,
                           reward=args.reward, seed=args.seed, envs=args.envs, protocol=args.protocol,
                           fits_now=args.fits_now)
        network = train_ppo(config, args.output, checkpoint=args.checkpoint, restart=args.restart,
                            progress=not args.quiet, log=None if args.quiet else _log)
    else:
        from .es import ESConfig, train_es

        config = ESConfig(workload=args.workload, nb_cores=nb_cores, backfill=args.backfill,
                          sequence_length=args.sequence_length, sequences=args.sequences,
                          start_range=args.start_range, hidden=args.hidden, population=args.population,
                          generations=args.generations, sigma=args.sigma, seed=args.seed, protocol=args.protocol,
                          fits_now=args.fits_now)
        progress = TaskProgress.for_cli(args.generations, "train-policy generations", enabled=not args.quiet)
        network = train_es(config, args.output, checkpoint=args.checkpoint, restart=args.restart,
                           progress=progress, log=None if args.quiet else _log)
    meta = network.metadata
    samples = (f"{meta['timesteps']:,} environment steps" if "timesteps" in meta
               else f"{meta.get('simulated_jobs', 0):,} simulated jobs")
    print(f"wrote {args.output}: a {'-'.join(map(str, (len(network.features), *network.hidden, 1)))} scoring network "
          f"({network.nb_parameters} weights) trained by {meta.get('algorithm')} on {meta.get('trained_on')} "
          f"({samples}, {meta.get('wall_time_s')} s); "
          f"use it with --policy rl:{args.output}")
    return 0


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _cores(args) -> int | None:
    if args.platform:
        from ..workloads import read_platform

        return read_platform(args.platform).nb_hosts
    return args.cores


def cmd_evaluate_policy(args) -> int:
    import json

    from .protocols import evaluate_orders

    orders = [o.strip() for o in args.orders.split(",") if o.strip()]
    if not orders:
        raise check.ValidationError("--orders expects a comma-separated list, e.g. fcfs,sjf,f1,rl:FILE.json")
    done = (lambda order: _log(f"{order}: done")) if not args.json and not args.quiet else None
    results = evaluate_orders(args.trace, orders, protocol=args.protocol, backfill=args.backfill,
                              sequences=args.sequences, length=args.sequence_length, seed=args.seed,
                              nb_cores=args.cores, progress=done)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1))
        return 0
    width = max(len(r.order) for r in results)
    backfill = "with" if args.backfill else "without"
    print(f"{args.trace}: protocol {args.protocol}, {backfill} backfilling, {len(results[0].values)} sequences of "
          f"{args.sequence_length} jobs; mean bounded slowdown (tau 10 s) with its 95% bootstrap CI over the sequences")
    for r in results:
        print(f"{r.order:<{width}}  {r.mean:12,.2f}  [{r.ci[0]:,.2f}, {r.ci[1]:,.2f}]")
    return 0


def add_rl_commands(sub) -> None:
    positive = lambda name: arg(check.positive_int, name, integer=True)  # noqa: E731
    p = sub.add_parser("train-policy", help="train a scoring network on job sequences (evolution strategies, "
                       "or PPO with the [rl] extra); use it with --policy rl:FILE")
    p.add_argument("workload", help="trace to sample sequences from: an SWF trace (.swf/.swf.gz), a Batsim JSON "
                   "workload, or lublin:CORES[:JOBS[:SEED]]")
    p.add_argument("-o", "--output", required=True, help="policy file to write (JSON; --policy rl:OUTPUT)")
    p.add_argument("-p", "--platform", default=None, help="machine platform XML (default: the trace's size)")
    p.add_argument("--cores", type=positive("--cores"), default=None, help="machine size instead of --platform")
    p.add_argument("--algorithm", choices=("es", "ppo"), default="es",
                   help="es: CMA-ES over the network's weights (default, no deep-learning dependency); "
                   "ppo: MaskablePPO in the Gymnasium environment (needs pip install 'batsched-ml[rl]')")
    p.add_argument("--backfill", choices=("none", "easy", "rlscheduler"), default="none",
                   help="the scheduler the policy orders: none = strict fcfs (default), easy = EASY backfilling "
                   "(protocol batsched-ml), rlscheduler = RLScheduler's backfilling (protocol rlscheduler)")
    p.add_argument("--protocol", choices=("batsched-ml", "rlscheduler"), default="batsched-ml",
                   help="whose trace reading, sequences and simulator: ours (default) or RLScheduler's")
    p.add_argument("--sequence-length", type=positive("--sequence-length"), default=256,
                   help="jobs per training sequence (default 256, as RLScheduler)")
    p.add_argument("--start-range", type=_start_range, default=None, metavar="LO,HI",
                   help="sequences start within this share of the trace (default 0,0.8: the last 20%% is held "
                   "back for evaluation; protocol rlscheduler: 0,1, where they trained and evaluate)")
    p.add_argument("--hidden", type=_hidden, default=(8,), help="hidden layer widths (default 8)")
    p.add_argument("--fits-now", action="store_true", help="the network also reads whether a job fits now (an "
                   "agent's feature: such a network runs in the environment and under --protocol rlscheduler, "
                   "not as --policy rl:FILE)")
    p.add_argument("--seed", type=arg(check.seed, "--seed", integer=True), default=0, help="seed (default 0)")
    p.add_argument("--checkpoint", default=None, help="checkpoint file (default OUTPUT.checkpoint.pkl; "
                   "an existing one with the same settings is resumed)")
    p.add_argument("--restart", action="store_true", help="ignore an existing checkpoint and start over")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or per-generation lines")
    es = p.add_argument_group("es")
    es.add_argument("--generations", type=positive("--generations"), default=None, help="generations (default 30)")
    es.add_argument("--population", type=arg(check.positive_int, "--population", integer=True), default=None,
                    help="candidates per generation (default 8)")
    es.add_argument("--sequences", type=positive("--sequences"), default=None,
                    help="training sequences per generation, the same for every candidate (default 4)")
    es.add_argument("--sigma", type=arg(check.positive, "--sigma"), default=None,
                    help="initial step size (default 0.5)")
    ppo = p.add_argument_group("ppo")
    ppo.add_argument("--timesteps", type=positive("--timesteps"), default=None,
                     help="environment steps (default 100000)")
    ppo.add_argument("--window", type=positive("--window"), default=None, help="observed queue window (default 128)")
    ppo.add_argument("--reward", choices=("bsld", "bsld-step", "wait", "wait-step", "utilisation"),
                     default=None, help="reward (default bsld-step: -AVEbsld paid as jobs start)")
    ppo.add_argument("--envs", type=positive("--envs"), default=None, help="parallel environments (default 1)")
    p.set_defaults(func=cmd_train_policy)

    from .protocols import PROTOCOLS

    p = sub.add_parser("evaluate-policy", help="score queue orders and policy files on a protocol's evaluation "
                       "sequences (ours, or RLScheduler's exactly), mean bounded slowdown with a 95%% CI")
    p.add_argument("trace", help="SWF trace (.swf/.swf.gz); batsched-ml protocol: also a Batsim JSON workload or "
                   "lublin:CORES[:JOBS[:SEED]]")
    p.add_argument("--protocol", choices=list(PROTOCOLS), default="batsched-ml",
                   help="batsched-ml: the embedded simulator, strict FCFS or EASY, sequences in the last 20%% of "
                   "the trace (seed 2020); rlscheduler: RLScheduler's simulator, sequences and orders (seed 1)")
    p.add_argument("--orders", required=True, help="comma-separated orders: fcfs,sjf,f1,wfp3,unicef; rl:FILE.json; "
                   "batsched-ml: any --policy; rlscheduler: also wfp3-published,unicef-published (their code's "
                   "wait) and rlscheduler-model:DIR[#sample=K] (their trained policy)")
    p.add_argument("--backfill", action="store_true", help="with the protocol's backfilling (batsched-ml: EASY; "
                   "rlscheduler: theirs); default without")
    p.add_argument("--sequences", type=positive("--sequences"), default=10, help="sequences (default 10)")
    p.add_argument("--sequence-length", type=positive("--sequence-length"), default=1024,
                   help="jobs per sequence (default 1024)")
    p.add_argument("--seed", type=arg(check.seed, "--seed", integer=True), default=None,
                   help="seed of the evaluation set (default: the protocol's: batsched-ml 2020, rlscheduler 1)")
    p.add_argument("--cores", type=positive("--cores"), default=None, help="machine size instead of the trace's")
    p.add_argument("--json", action="store_true", help="print a JSON list of {order, mean, ci_low, ci_high, "
                   "sequences: [{start, bsld}]}")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_evaluate_policy)
