"""Grading of the notebooks' "check yourself" exercises: the engine computes the answer, the
learner's entry is compared with it, and the notebook shows the verdict or a hint.

    ok, message = check_number(text_box.value, truth=12, hint="O = ⌊(W + 2P − K)/S⌋ + 1")

An empty box is "no answer yet", text that is not a number gets a gentle message: neither is an
error, so a notebook can pass any entry straight in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["ChoiceExercise", "Exercise", "NumberExercise", "check_number", "parse_number"]


def parse_number(answer):
    """The learner's entry as a float, or None when it is empty or not a finite number.

    Accepts numbers and text such as ' 12 ', '0.5', '1e-3', '3/4' (a fraction) or '1,5' (a decimal comma).
    """
    if answer is None or isinstance(answer, bool):
        return None
    if isinstance(answer, (int, float)):
        value = float(answer)
        return value if math.isfinite(value) else None
    text = str(answer).strip().replace(",", ".")
    if not text or len(text) > 40:
        return None
    try:
        if text.count("/") == 1:
            num, den = text.split("/")
            value = float(num) / float(den)
        else:
            value = float(text)
    except (ValueError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) else None


def check_number(
    answer, truth: float, hint: str, rel_tol: float = 0.0, abs_tol: float = 0.0, unit: str = ""
) -> tuple[bool | None, str]:
    """Grade one numeric answer.

    Returns ``(None, prompt)`` when there is no usable answer yet, ``(True, praise)`` when
    ``|answer − truth| <= max(abs_tol, rel_tol·|truth|)`` (exact equality with the default
    tolerances, for whole-number answers), else ``(False, hint)``.
    """
    truth = float(truth)
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return None, "Type your answer in the box to check it."
    value = parse_number(answer)
    if value is None:
        return None, f"“{str(answer)[:40]}” is not a number I can read: type digits, e.g. 12 or 0.25."
    shown = f"{truth:g}{unit}"
    if abs(value - truth) <= max(abs_tol, rel_tol * abs(truth)):
        return True, f"Right: {shown}."
    direction = "too large" if value > truth else "too small"
    return False, f"Not quite: {value:g} is {direction}. Hint: {hint}"


# ----------------------------------------------------------------------------- exercises
# The notebook convention (docs/notebook-convention.md): an exercise is built once, in the cell that
# creates its answer box (which reads no answer), so a keystroke re-runs only the grading.


class Exercise:
    """A graded "check yourself" question: ``check(answer) -> (ok, message)``, where ``ok`` is
    True (right), False (wrong, the message carries the hint) or None (no answer yet)."""

    question: str

    def check(self, answer) -> tuple[bool | None, str]:
        raise NotImplementedError


@dataclass(frozen=True)
class NumberExercise(Exercise):
    """A numeric answer, right within ``max(abs_tol, rel_tol·|truth|)`` (see :func:`check_number`).

    ``truth`` is computed by the engine or a lab when the exercise is built; ``explanation`` is
    added to the praise (why the number is what it is).
    """

    question: str
    truth: float
    hint: str
    rel_tol: float = 0.0
    abs_tol: float = 0.0
    unit: str = ""
    explanation: str = ""
    placeholder: str = "your answer"  # what the empty answer box shows
    label: str = ""  # the answer box's label

    def check(self, answer) -> tuple[bool | None, str]:
        ok, message = check_number(
            answer, self.truth, self.hint, rel_tol=self.rel_tol, abs_tol=self.abs_tol, unit=self.unit
        )
        if ok and self.explanation:
            message = f"{message} {self.explanation}"
        return ok, message


@dataclass(frozen=True)
class ChoiceExercise(Exercise):
    """A multiple-choice answer: ``options`` maps each label to its value; ``truth`` is the right
    value. ``explanation`` follows a right answer, ``hint`` a wrong one."""

    question: str
    options: dict = field(hash=False)
    truth: object
    hint: str
    explanation: str = ""
    label: str = ""  # the radio's label

    def __post_init__(self):
        if self.truth not in self.options.values():
            raise ValueError(
                f"ChoiceExercise: the truth {self.truth!r} is not one of the options {list(self.options.values())}"
            )

    def check(self, answer) -> tuple[bool | None, str]:
        if answer is None:
            return None, "Choose an answer."
        if answer == self.truth:
            return True, f"Right. {self.explanation}".strip()
        return False, f"Not this one. Hint: {self.hint}"
