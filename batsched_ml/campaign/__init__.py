"""Campaigns: traces x configurations x seeds (x windows) described in TOML, run on Dask
(local cluster or a scheduler address), cached and resumable; see ``docs/campaigns.md``.

Modules: ``spec`` (read and validate a campaign file), ``inputs`` (traces -> workload files),
``tasks`` (one simulation), ``cache``, ``results`` (results.csv / parquet), ``report`` (Markdown
tables and figures), ``run`` (the whole run, on the generic ``batsched_ml.executor``).
"""
