"""The promised equivalences, on random workloads and configurations, in every reservation model
(issue 23 §2). The workloads and configurations are the property test's (``random_cases``:
identical instants, jobs ending before, at and after their walltime, zero-length, oversized and
walltime-less jobs, two workloads; every policy, backfill order, starvation threshold, classifier,
``rjms_delay``, Batsim's latencies or exact instants):

* ``--scheduler probabilistic --distribution walltime`` (point masses: no history ever) gives
  exactly EASY's run, with either ``rescan``;
* conservative backfilling's compiled pass (``-o compiled=true``) gives the Python pass's run
  (in either reservation model: ``count``'s ``compression/``, ``cores``'s ``ArrayCoreProfile``);
* ``serve`` driven over ZeroMQ gives the in-process run.

"Run" is the jobs file and, in-process, every protocol message. A few examples each in CI;
``tests/test_slow_property_campaign.py`` (``-m slow``) draws thousands.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from random_cases import configurations, describe, workloads

from equivalence_cases import (batsim_timing, compiled_vs_python, serve_vs_in_process, walltime_vs_easy,
                               without_predictor)

CI = dict(deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=60, **CI)
@given(workload=workloads(), config=configurations(["easy"]).map(without_predictor),
       rescan=st.sampled_from(["always", "changes"]))
def test_walltime_distribution_is_easy(workload, config, rescan):
    problems = walltime_vs_easy(workload, config, rescan)
    assert not problems, describe(workload, config, problems)


@settings(max_examples=40, **CI)
@given(workload=workloads(max_jobs=16), config=configurations(["conservative"]))
def test_compiled_conservative_pass_is_the_python_pass(workload, config):
    problems = compiled_vs_python(workload, config)
    assert not problems, describe(workload, config, problems)


@settings(max_examples=12, **CI)
@given(workload=workloads(), config=configurations().map(batsim_timing))
def test_serve_is_the_in_process_run(workload, config):
    problems = serve_vs_in_process(workload, config)
    assert not problems, describe(workload, config, problems)
