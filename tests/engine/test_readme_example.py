"""The README's "use the engine in a script" example runs, and it learns.

The code between the ``readme-example`` markers is extracted and run as a script in a fresh
interpreter from the repository root, exactly as a reader would paste it into a file.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- readme-example:start -->", "<!-- readme-example:end -->"


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1, "README needs one pair of example markers"
    section = text.split(START, 1)[1].split(END, 1)[0]
    match = re.fullmatch(r"\s*```python\n(.*?)```\s*", section, flags=re.DOTALL)
    assert match, "the README example must be a single ```python block between the markers"
    return match.group(1)


def test_readme_example_trains_a_classifier():
    result = subprocess.run(
        [sys.executable, "-c", readme_example()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"README example failed:\n{result.stderr[-3000:]}"

    losses = [float(v) for v in re.findall(r"^step\s+\d+\s+loss ([0-9.]+)$", result.stdout, re.M)]
    assert len(losses) == 5, f"expected 5 loss lines, got:\n{result.stdout}"
    # Three balanced-ish classes: an untrained model sits near ln 3 = 1.10.
    assert 0.7 < losses[0] < 2.0, losses
    assert losses[-1] < 0.2 and losses[-1] < losses[0] / 4, f"the loss did not fall: {losses}"

    accuracy = re.search(r"^training accuracy ([0-9.]+)$", result.stdout, re.M)
    assert accuracy, result.stdout
    assert float(accuracy.group(1)) >= 0.95, result.stdout
