"""Shared bookkeeping of the port_*.py scripts: each ports one kernel library's RoPE test grid onto
rope_ref.testing.assert_rope_close, with the library's own reference function as the kernel under test.

A case passes when assert_rope_close accepts the reference's output; a plant is caught when the reference with a
planted defect fails and the message names what was planted (one of the words given)."""

from __future__ import annotations

import traceback

from rope_ref.kernel_check import RopeMismatch

RESULTS = {"pass": 0, "fail": 0, "caught": 0, "caught, unnamed": 0, "missed": 0, "error": 0}


def case(label: str, check) -> bool:
    """Run check() (which calls assert_rope_close); count and print a failure."""
    try:
        check()
    except RopeMismatch as err:
        RESULTS["fail"] += 1
        print(f"FAIL {label}\n{err}\n")
        return False
    except Exception:                                  # noqa: BLE001 (a raw error is a finding)
        RESULTS["error"] += 1
        print(f"ERROR {label}\n{traceback.format_exc()}")
        return False
    RESULTS["pass"] += 1
    return True


def plant(label: str, check, names: tuple) -> None:
    """check() runs a planted defect through assert_rope_close: it must fail, naming one of ``names``."""
    try:
        check()
    except RopeMismatch as err:
        text = str(err)
        named = any(n in text or n in getattr(err, "defects", ()) for n in names)
        RESULTS["caught" if named else "caught, unnamed"] += 1
        print(f"PLANT {label}: {'caught and named' if named else 'caught, NOT named ' + repr(names)}; "
              f"defects={err.defects}\n  " + "\n  ".join(text.splitlines()[:4]) + "\n")
        return
    except Exception:                                  # noqa: BLE001
        RESULTS["error"] += 1
        print(f"PLANT {label}: raw error\n{traceback.format_exc()}")
        return
    RESULTS["missed"] += 1
    print(f"PLANT {label}: MISSED (passed silently)\n")


def summary(suite: str) -> None:
    print(f"== {suite}: " + ", ".join(f"{k} {v}" for k, v in RESULTS.items()))
