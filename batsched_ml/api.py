"""The public plugin API of batsched-ml: what a plugin may import, read and do.

Import plugin base classes and types from here, and only from here: everything else in the
package may change between releases; this module changes by the rules of `API_VERSION`.

Versioning (``API_VERSION = "MAJOR.MINOR"``): a minor version only adds (a new read-only
attribute, a new optional hook); a major version may remove or change. A plugin class may
declare the version it needs, ``api_version = "1.0"``: it is refused at load time, with one
line naming it and its distribution, when the major versions differ or when it needs a newer
minor version than this package provides.

**Six kinds of plugins**, each an entry point group (``pyproject.toml``):

| group | base class | chosen by |
|---|---|---|
| ``batsched_ml.schedulers`` | `Scheduler` (or `QueueScheduler`) | ``--scheduler NAME`` |
| ``batsched_ml.policies`` | `Policy` | ``--policy NAME`` |
| ``batsched_ml.predictors`` | `RuntimePredictor` | ``--predictor NAME`` |
| ``batsched_ml.corrections`` | `Correction` | ``--correction NAME`` |
| ``batsched_ml.classifiers`` | `JobClassifier` | ``--classifier NAME`` |
| ``batsched_ml.distributions`` | `RuntimeDistribution` | ``--distribution NAME`` |

A plugin's constructor parameters are its ``-o`` options (prefixed ``policy_``,
``predictor_``, ``correction_``, ``distribution_`` for those kinds); a scheduler's constructor
parameters also say which collaborators and flags it accepts (``policy``, ``estimator``,
``distribution``, ``reservations``, ``backfill_order``, ``starvation_threshold``): a flag
the scheduler does not take is refused, never ignored.

**What a plugin may read**

* a `Job`'s fields: ``id``, ``subtime``, ``walltime`` (``has_walltime``,
  ``walltime_cap``), ``res`` (cores), ``data`` (every field of the workload's job object, e.g.
  ``data["user"]``), ``submission_time``, ``estimate`` (the runtime the scheduler believes),
  ``state``, ``start_time``, ``end_time``, ``final_state``, ``attempt``, ``original_id``;
  ``runtime`` (the real one) is for clairvoyant baselines only; ``info`` is a scratch dict
  where plugins may write (``info["small"]``, ``info["prediction"]``);
* the `Context` of a hook: ``now``, ``machine`` (`Machine`: ``nb_cores``,
  ``nb_free``, ``free_mask``, ``lowest_free(n)``), ``jobs``, ``running``, ``workloads`` (the
  workload files, for their metadata), ``static_submission_over``, ``decisions``; a job started
  earlier in the same pass is already in ``running``, with its ``start_time``, its cores taken;
* a `QueueScheduler`'s ``queue`` (`JobQueue`: ``first(now)``, ``ordered(now)``,
  ``iter_ordered(now)``, ``len``, ``in``; for backfilling ``fit_search``, ``shortest_by_size``),
  ``policy``, ``estimator``, ``backfill_candidates`` and ``needs_walltime`` (the scheduler
  documentation's "Within a pass" computes a shadow time with them);
* estimates: ``job.estimate``, set at submission by the estimator (a `RuntimePredictor`
  and optional `Correction`) and corrected while the job runs.

**What a plugin may do** (schedulers, through the context): ``ctx.execute(job, mask)``,
``ctx.reject(job, reason)``, ``ctx.kill(job)``, ``ctx.call_me_later(at)``,
``ctx.requeue(job)`` (after a kill, with dynamic jobs), ``ctx.set_metadata(job, text)``. Other
kinds answer their methods (``key``, ``predict``, ``advance``, ``classify``, ``predict_proba``)
and learn through ``partial_fit`` / ``fit``.

No plugin touches another object's ``_``-prefixed attributes, built-in ones included.

**Forks** (1.2): a run forked from a snapshot (``simulate --fork``) begins at the snapshot's date and
hands its scheduler the running then the queued jobs (``Scheduler.on_job_adopted``); each component
takes over what it can from the snapshot's component of the same kind (``Scheduler.fork_from``,
``Params.fork_from``: by default the learned state of the same plugin with the same parameters),
and says so.

Learning components (predictors, corrections, classifiers, distributions) follow
scikit-learn's estimator contract (`Params`): the constructor only stores its
parameters; ``validate_params`` checks them (called when a run is built and when learning
starts); learned state ends in ``_`` and is created by ``reset`` / ``fit``; ``get_params`` /
``set_params``.

Two shapes that a learned (e.g. reinforcement-learning) scheduler takes, both expressible here:
a **policy that scores jobs** (``Policy.key(job, now)``: lower runs first; set ``dynamic =
True`` if the score depends on ``now``; since 1.1, ``Policy.order(jobs, now)`` may score the
whole queue in one call and ``Policy.on_simulation_begins(nb_cores)`` is told the machine
size: ``--policy rl:FILE``, ``batsched_ml.policies.network``) used by any queue scheduler;
and a **scheduler where an agent picks the next job**: a `QueueScheduler` whose ``schedule(ctx)`` shows the agent
``self.queue.ordered(ctx.now)``, ``ctx.machine`` and ``ctx.now``, starts the job it picks with
``ctx.execute(job, ctx.machine.lowest_free(job.res))`` (then ``self.queue.remove(job)``) and asks
``ctx.call_me_later`` when it wants to decide again without an event.
"""

from __future__ import annotations

from .classifiers.models import JobClassifier
from .config.params import Params
from .config.plugins import API_VERSION
from .config.validate import ValidationError
from .core.job import FINISHED, QUEUED, REJECTED, RUNNING, Job
from .core.machine import Machine
from .core.queue import JobQueue
from .core.scheduler import CALL_MARGIN, Context, Scheduler, SchedulingError
from .distributions.base import RuntimeDistribution
from .distributions.bins import RuntimeBins
from .policies.orders import Policy
from .predictors import Estimator
from .predictors.base import Correction, RuntimePredictor
from .scheduling.base import QueueScheduler

__all__ = [
    "API_VERSION",
    "CALL_MARGIN",
    "Context",
    "Correction",
    "Estimator",
    "FINISHED",
    "Job",
    "JobClassifier",
    "JobQueue",
    "Machine",
    "Params",
    "Policy",
    "QUEUED",
    "QueueScheduler",
    "REJECTED",
    "RUNNING",
    "RuntimeBins",
    "RuntimeDistribution",
    "RuntimePredictor",
    "Scheduler",
    "SchedulingError",
    "ValidationError",
]
