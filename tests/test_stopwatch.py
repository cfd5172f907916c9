"""The stopwatch the learning components report their cost with: wall and CPU apart, summed."""

import time

import pytest

from batsched_ml.stopwatch import Stopwatch


def _spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_sleeping_counts_as_wall_time_only_and_blocks_add_up():
    watch = Stopwatch()
    with watch:
        time.sleep(0.05)
    assert watch.last_wall >= 0.05 and watch.last_cpu < 0.02
    first_cpu = watch.cpu
    with watch:
        _spin(0.05)
    assert watch.last_cpu >= 0.05
    assert watch.cpu == pytest.approx(first_cpu + watch.last_cpu)
    assert watch.wall >= 0.1 and watch.wall == pytest.approx(0.05 + watch.last_wall, abs=0.05)


def test_elapsed_reads_an_open_block_and_blocks_do_not_nest():
    watch = Stopwatch().start()
    _spin(0.02)
    wall, cpu = watch.elapsed()
    assert cpu >= 0.02 and wall >= cpu * 0.5
    with pytest.raises(RuntimeError, match="already running"):
        watch.start()
    with pytest.raises(RuntimeError, match="not running"):
        Stopwatch().elapsed()
