"""The bundled samples, by name from any directory: ``-w sample:KTH-SP2-1k -p sample:cluster-100``.

The package carries a small workload and its platforms (``batsched_ml/samples/``, package data of
the wheel and of the Docker and Nix builds; the same bytes as the clone's ``workloads/`` and
``platforms/``, which the README's commands name, and one git object each), so the quick start
runs from an installed wheel too. Wherever a workload or platform file is read, ``sample:NAME`` (with or
without the file's suffix) names one of them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PREFIX", "SAMPLES", "SampleError", "sample_path", "samples_directory"]

PREFIX = "sample:"
SAMPLES = {  # name -> what it is (the file is NAME plus its suffix)
    "KTH-SP2-1k.json": "a workload, the first 1,000 jobs of the KTH-SP2 trace, for cluster-100",
    "cluster-100.xml": "a platform of 100 hosts, KTH-SP2's machine",
    "cluster-16.xml": "a platform of 16 hosts, too small for 159 of the sample's jobs",
}


class SampleError(ValueError):
    """An unknown sample name (one line; the CLI exits 2)."""


def samples_directory() -> Path:
    return Path(__file__).resolve().parents[1] / "samples"


def sample_path(path):
    """``path`` itself, or the bundled file a ``sample:NAME`` names."""
    text = str(path) if isinstance(path, (str, Path)) else None
    if text is None or not text.startswith(PREFIX):
        return path
    name = text[len(PREFIX):]
    found = next((f for f in SAMPLES if name in (f, f.rsplit(".", 1)[0])), None)
    if found is None:
        listed = "; ".join(f"{f.rsplit('.', 1)[0]} = {what}" for f, what in SAMPLES.items())
        raise SampleError(f"unknown sample {name!r}; the samples: {listed}")
    return samples_directory() / found
