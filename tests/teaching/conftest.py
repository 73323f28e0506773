"""The browser tests' headless Chromium: Debian's /usr/bin/chromium driven by Playwright from PyPI (no ``playwright
install``).  Under ``CI=true`` a missing browser fails; elsewhere the tests skip."""

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def chromium() -> Path:
    """The browser's path; skips (fails under CI=true) when it is not installed."""
    if not CHROMIUM.exists():
        msg = f"{CHROMIUM} not found: install it with `apt-get update && apt-get install -y chromium`"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " (CI=true: a missing browser is a failure)")
        pytest.skip(msg)
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS, timeout=120_000)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def model():
    """SmolLM2-135M, loaded and dequantized once per module (15-30 s)."""
    from rope_ref.teaching.real_model import load_smollm2
    return load_smollm2()
