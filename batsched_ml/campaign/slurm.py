"""``campaign run --slurm JOBS``: the campaign's Dask workers are Slurm jobs (dask-jobqueue).

The Dask scheduler runs in the ``campaign run`` process; each Slurm job runs single-threaded
workers, one per core, that connect back to it; the jobs are cancelled when the run ends. What a
job asks of Slurm (cores, memory, walltime, partition, account, ...) is dask-jobqueue's own
configuration (``jobqueue.slurm`` in ``~/.config/dask/jobqueue.yaml`` or ``DASK_JOBQUEUE__SLURM__*``
variables): it belongs to the cluster, not to the campaign. A worker whose job is cancelled or
killed loses its tasks to the other workers, which resume them from their snapshots
(``[campaign] checkpoint_every``), and is replaced by a new job. Tested on a one-node Slurm 22.05 (``tests/test_campaign_slurm.py``).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

__all__ = ["slurm_cluster"]

INSTALL = "pip install 'batsched-ml[slurm]'"


@contextmanager
def slurm_cluster(jobs: int, log=print):
    """A dask-jobqueue ``SLURMCluster`` of ``jobs`` Slurm jobs; yields its scheduler's address."""
    try:
        import dask
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ValueError(f"--slurm needs dask-jobqueue ({INSTALL})") from None
    from ..executor import LOCAL_CLUSTER_CONFIG

    settings = dask.config.get("jobqueue.slurm", default={}) or {}
    kwargs = {}
    if settings.get("processes") is None and settings.get("cores"):
        kwargs["processes"] = settings["cores"]  # single-threaded workers, one per core
    scheduler = {k: v for k, v in LOCAL_CLUSTER_CONFIG.items() if k.startswith("distributed.scheduler.")}
    with dask.config.set(scheduler):  # one task per worker at a time, nothing to steal
        try:
            cluster = SLURMCluster(**kwargs)
        except ValueError as exc:  # no cores or memory configured
            raise ValueError(f"--slurm: {exc}; set it in dask-jobqueue's configuration (jobqueue.slurm, "
                             "docs/campaigns.md)") from None
    stop = threading.Event()
    keeper = threading.Thread(target=_keep_jobs, args=(cluster, jobs, stop), name="batsched-ml Slurm jobs",
                              daemon=True)
    with cluster:
        cluster.scale(jobs=jobs)
        per_job = kwargs.get("processes") or settings.get("processes")
        log(f"--slurm: {jobs} Slurm job(s) of {per_job} worker(s) submitted, "
            f"Dask scheduler at {cluster.scheduler_address}")
        keeper.start()
        try:
            yield cluster.scheduler_address
        finally:
            stop.set()
            keeper.join()


def _keep_jobs(cluster, jobs: int, stop: threading.Event) -> None:
    """Replace the jobs that ended (cancelled, past their walltime, their node lost): Dask forgets a
    lost worker's job ``distributed.deploy.lost-worker-timeout`` (15 s) after it left; scaling
    to ``jobs`` again then submits a new one. Checked at that same period."""
    import dask
    from dask.utils import parse_timedelta

    every = parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout"))
    while not stop.wait(every):
        cluster.scale(jobs=jobs)
