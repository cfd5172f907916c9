"""The API reference a plugin author reads (issue 40 §6): docstrings in the markup the page renders
(no raw Sphinx roles), every field of ``Job`` and ``needs_walltime`` documented, and what the
scheduler docs say about a pass -- ``ctx.running`` and ``job.start_time`` show the jobs started
earlier in it; the shadow-time example -- true of the code."""

from __future__ import annotations

import csv
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

from batsched_ml.api import Job, QueueScheduler
from batsched_ml.runner import build_scheduler, simulate
from batsched_ml.simulator.engine import NO_LATENCY

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
ROLE = re.compile(r":(?:py:)?(?:class|meth|func|data|attr|mod|exc|obj|const|ref):`")


def _rendered_objects():
    """The objects docs/api.md renders (``::: name`` and its ``members`` option), with the members
    of classes rendered whole."""
    lines = (ROOT / "docs" / "api.md").read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("::: "):
            continue
        name = line[4:].strip()
        options = "\n".join(lines[i + 1:i + 4])
        module, _, attr = name.rpartition(".")
        try:
            obj = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            obj = importlib.import_module(name)
        yield name, obj
        listed = re.search(r"members: \[(.*?)\]", options)
        if listed:
            for member in listed.group(1).split(", "):
                yield f"{name}.{member}", getattr(obj, member)
        elif inspect.isclass(obj) and "members: false" not in options:
            for member, value in vars(obj).items():
                if not member.startswith("_"):
                    yield f"{name}.{member}", value


def test_the_api_page_docstrings_have_no_sphinx_roles():
    """mkdocstrings shows :class:`~x.Y` as raw text: 23 of them were on the page."""
    raw = []
    for name, obj in _rendered_objects():
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        doc = obj.__doc__ if isinstance(obj, property) else inspect.getdoc(obj)
        raw += [f"{name}: {doc[m.start():m.start() + 50]!r}" for m in ROLE.finditer(doc or "")]
    assert not raw, raw


def test_every_field_of_job_is_documented():
    """mkdocstrings lists a field only with a docstring: Job's entry showed none of them."""
    source = inspect.getsource(Job)
    for field in dataclasses.fields(Job):
        assert re.search(rf"^    {field.name}: [^\n]*\n    \"\"\"", source, re.M), field.name
    for prop in ("has_walltime", "walltime_cap", "expected_end"):
        assert getattr(Job, prop).__doc__, prop


def test_needs_walltime_is_documented():
    source = inspect.getsource(QueueScheduler)
    assert re.search(r"^    needs_walltime = True\n    \"\"\"Whether a job without a walltime is rejected", source, re.M)
    assert "`needs_walltime`" in (ROOT / "docs" / "plugins" / "scheduler.md").read_text()


class _Recorder(QueueScheduler):
    """Starts every queued job that fits, recording what the context shows after each start."""

    name = "recorder"
    needs_walltime = False

    def __init__(self):
        super().__init__()
        self.seen = []

    def schedule(self, ctx):
        for job in list(self.queue.ordered(ctx.now)):
            if job.res <= ctx.machine.nb_free:
                free = ctx.machine.nb_free
                self.start_job(ctx, job)
                self.seen.append((ctx.now, job.start_time, job.id in ctx.running, free - ctx.machine.nb_free,
                                  job.res, sorted(ctx.running)))
        self.end_pass(ctx)


def test_a_pass_sees_the_jobs_it_started():
    """What the docs say: after ``start_job`` (``ctx.execute``) the job is in ``ctx.running`` with
    ``start_time == ctx.now``, and its cores are taken from ``ctx.machine``, in the same pass."""
    recorder = _Recorder()
    simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz", recorder, latency=NO_LATENCY)
    assert len(recorder.seen) == 60
    for now, start, running, taken, res, _ in recorder.seen:
        assert start == now and running and taken == res
    by_instant = {}
    for now, _, _, _, _, running in recorder.seen:
        by_instant.setdefault(now, []).append(running)
    together = [starts for starts in by_instant.values() if len(starts) > 1]
    assert together  # some passes start several jobs: each sees the ones before it
    assert all(set(a) < set(b) for starts in together for a, b in zip(starts, starts[1:]))


def _docs_example():
    text = (ROOT / "docs" / "plugins" / "scheduler.md").read_text()
    block = text.split("## Within a pass")[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace = {}
    exec(compile(block, "docs/plugins/scheduler.md", "exec"), namespace)
    backfill = namespace["backfill"]

    class DocsEasy(QueueScheduler):
        name = "docs-easy"

        def schedule(self, ctx):
            head = self.queue.first(ctx.now)
            while head is not None and head.res <= ctx.machine.nb_free:
                self.start_job(ctx, head)
                head = self.queue.first(ctx.now)
            if head is not None:
                backfill(self, ctx, head)
            self.end_pass(ctx)

    return DocsEasy


def _starts(path) -> dict:
    with open(path, newline="") as f:
        return {row["job_id"]: row["starting_time"] for row in csv.DictReader(f)}


def test_the_docs_shadow_time_example_is_easy(tmp_path):
    """The docs' ``shadow_time`` + ``backfill`` (fit_search, expected_end) make textbook EASY: on the
    tiny golden workload, the schedule of ``easy --reservations count``, start for start; on the
    1,000-job sample a valid schedule."""
    from batsched_ml.analysis.checker import inconsistencies

    docs_easy = _docs_example()
    mine, _ = simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz", docs_easy(), tmp_path / "docs",
                       latency=NO_LATENCY)
    builtin, _ = simulate(DATA / "platform-16.xml", DATA / "tiny.json.gz",
                          build_scheduler("easy", reservations="count", rjms_delay=0), tmp_path / "easy",
                          latency=NO_LATENCY)
    assert _starts(mine.jobs_csv) == _starts(builtin.jobs_csv)
    sample, _ = simulate(ROOT / "platforms" / "cluster-100.xml", ROOT / "workloads" / "KTH-SP2-1k.json", docs_easy(),
                         tmp_path / "kth", latency=NO_LATENCY)
    assert inconsistencies(sample.jobs_csv) == []
    starts = _starts(sample.jobs_csv)
    assert len(starts) == 1000 and all(value != "" for value in starts.values())


@pytest.mark.parametrize("page_claims", ["running", "start_time", "fit_search", "shortest_by_size",
                                         "backfill_candidates", "expected_end"])
def test_the_scheduler_page_explains_the_backfilling_helpers(page_claims):
    section = (ROOT / "docs" / "plugins" / "scheduler.md").read_text().split("## Within a pass")[1]
    section = section.split("\n## ")[0]
    assert page_claims in section
