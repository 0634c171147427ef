"""The test helpers themselves: skips that become failures in CI, and an oracle that can fail."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from oracle import check_against_torch, check_gradcheck, random_arrays

TESTS = Path(__file__).resolve().parents[1] / "support"  # oracle.py


# ----------------------------------------------------------------------------- skip or fail
def _run_pytest(tmp_path, body: str, env_extra: dict[str, str]):
    """Run a one-test file in a fresh pytest, with the given environment; returns (code, output)."""
    test_file = tmp_path / "test_probe.py"
    test_file.write_text(textwrap.dedent(body).replace("TESTS", repr(str(TESTS))))
    ignored = {"REQUIRE_ORACLE", "REQUIRE_BROWSER", "CHROMIUM_PATH"}
    env = {k: v for k, v in os.environ.items() if k not in ignored}
    env.update(env_extra)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(test_file), "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode, result.stdout + result.stderr


TORCH_PROBE = """
    import sys
    sys.modules["torch"] = None  # as if torch were not installed
    sys.path.insert(0, TESTS)
    from oracle import require_torch

    def test_needs_torch():
        require_torch()
"""

BROWSER_PROBE = """
    import sys
    sys.path.insert(0, TESTS)
    from oracle import require_browser

    def test_needs_chromium():
        require_browser()
"""


def test_missing_torch_skips_with_reason(tmp_path):
    code, output = _run_pytest(tmp_path, TORCH_PROBE, {})
    assert code == 0, output
    assert "1 skipped" in output and "torch not installed" in output and "torch==2.13.0" in output


def test_missing_torch_fails_under_require_oracle(tmp_path):
    code, output = _run_pytest(tmp_path, TORCH_PROBE, {"REQUIRE_ORACLE": "1"})
    assert code == 1, output
    assert "1 failed" in output and "torch not installed" in output


def test_missing_chromium_skips_or_fails(tmp_path):
    missing = {"CHROMIUM_PATH": str(tmp_path / "no-such-chromium")}
    code, output = _run_pytest(tmp_path, BROWSER_PROBE, missing)
    assert code == 0 and "1 skipped" in output, output
    code, output = _run_pytest(tmp_path, BROWSER_PROBE, {**missing, "REQUIRE_BROWSER": "1"})
    assert code == 1 and "1 failed" in output, output


# ----------------------------------------------------------------------------- the oracle
@pytest.mark.oracle
def test_oracle_accepts_a_correct_op_with_broadcasting():
    a, b = random_arrays((3, 4), (4,))
    out, _ = check_against_torch(lambda x, y: x * y - y, lambda x, y: x * y - y, [a, b])
    assert out.data.dtype == np.float64


@pytest.mark.oracle
def test_oracle_treats_integer_inputs_as_constants():
    (x,) = random_arrays((5, 3))
    index = np.array([0, 4, 0, 2])  # a repeated index accumulates its gradient
    check_against_torch(lambda t, i: t[i], lambda t, i: t[i], [x, index])


@pytest.mark.oracle
def test_oracle_catches_a_wrong_forward():
    (x,) = random_arrays((4, 3))
    with pytest.raises(AssertionError, match="forward"):
        check_against_torch(lambda t: t * t, lambda t: t * t * 1.001, [x])


@pytest.mark.oracle
def test_oracle_catches_a_wrong_gradient_behind_a_right_forward():
    (x,) = random_arrays((4, 3))
    # x.detach() * x computes x² but its gradient is x, not 2x.
    with pytest.raises(AssertionError, match="gradient of input 0"):
        check_against_torch(lambda t: t.detach() * t, lambda t: t * t, [x])


@pytest.mark.oracle
def test_random_upstream_gradient_catches_what_sum_would_miss():
    """A gradient routed to the wrong elements: identical under g = ones, wrong under random g."""
    import engine

    def identity_with_swapped_gradient(t):  # forward: t; backward: g reversed
        swapped = t[np.array([1, 0])]
        return t.detach() + swapped - swapped.detach()

    x = np.array([0.3, -1.2])
    with_ones = engine.Tensor(x, requires_grad=True)
    identity_with_swapped_gradient(with_ones).backward(np.ones(2))
    np.testing.assert_allclose(with_ones.grad.numpy(), np.ones(2))  # what `.sum().backward()` sees

    with pytest.raises(AssertionError, match="gradient of input 0"):
        check_against_torch(identity_with_swapped_gradient, lambda t: t * 1.0, [x])


def test_gradcheck_wrapper_passes_and_fails():
    (x,) = random_arrays((3, 2), seed=1)
    check_gradcheck(lambda t: (t * t).sum(dim=1), [x])
    with pytest.raises(Exception):
        check_gradcheck(lambda t: (t.detach() * t).sum(dim=1), [x])
