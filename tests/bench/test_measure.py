"""measure.peak_host_memory: main_test's own peak when its report has one, else ru_maxrss."""

from pathlib import Path

import pytest

from tilegraph.bench.measure import ChildResult, peak_host_memory

RU_MAXRSS = 100 << 20  # what wait4 says: at least the parent's size (a Ray worker's)


def child() -> ChildResult:
    return ChildResult(returncode=0, seconds=1.0, peak_host_bytes=RU_MAXRSS, peak_device_bytes=None,
                       log=Path("main_test.log"))


def test_the_reports_own_peak_wins():
    assert peak_host_memory({"peak_host_memory_bytes": 7 << 20}, child()) == 7 << 20


@pytest.mark.parametrize("report", [
    {},                                  # main_test built before it reported its peak
    {"peak_host_memory_bytes": None},    # no /proc/self/status where it ran
    {"peak_host_memory_bytes": 0},
    {"peak_host_memory_bytes": "7"},
])
def test_without_a_usable_own_peak_ru_maxrss_stands_in(report):
    assert peak_host_memory(report, child()) == RU_MAXRSS
