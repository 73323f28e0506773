"""Markers for the whole run (tests/, benchmarks/).

`pytest` (the README's command and CI's) runs everything; `pytest -m "not slow"` is the quick loop.
Whole files that are slow by nature are marked here, so no test in them can be forgotten:
the notebooks executed once (tests/teaching/test_notebooks_run.py), the course site, the benchmarks' smoke runs.  Single slow tests elsewhere carry ``@pytest.mark.slow`` themselves.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
SLOW_FILES = {
    ROOT / "tests" / "teaching" / "test_notebooks_run.py",
    ROOT / "tests" / "teaching" / "test_site.py",
}
SLOW_DIRS = {ROOT / "benchmarks"}


def is_slow_path(path: Path) -> bool:
    """True for a benchmark smoke test or a file in SLOW_FILES."""
    path = Path(path).resolve()
    return path in SLOW_FILES or any(d in path.parents for d in SLOW_DIRS)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_slow_path(item.path):
            item.add_marker(pytest.mark.slow)
