"""The labs' one "are these the shipped settings?" test (engine.course.labs._checks.is_default)."""

import pytest

from engine.course.labs._checks import is_default

DEFAULT = {"lr": 0.3, "steps": 1500, "data": "moons", "relu": True}


def test_equal_settings_and_subsets_are_default():
    assert is_default("op", dict(DEFAULT), DEFAULT)
    assert is_default("op", {"lr": 0.3}, DEFAULT)


def test_numbers_compare_to_round_off_only():
    assert is_default("op", {"lr": 0.1 + 0.2, "steps": 1500.0}, DEFAULT)  # 0.30000000000000004
    assert not is_default("op", {"lr": 0.3001}, DEFAULT)
    assert not is_default("op", {"steps": 1499}, DEFAULT)


def test_bools_and_strings_must_be_equal():
    assert not is_default("op", {"relu": 1.0 - 1.0}, DEFAULT)  # 0.0 is not False here
    assert not is_default("op", {"relu": False}, DEFAULT)
    assert not is_default("op", {"data": "circles"}, DEFAULT)


def test_an_unknown_setting_raises_naming_it():
    with pytest.raises(ValueError, match=r"my_lab: unknown settings \['lrr'\]"):
        is_default("my_lab", {"lrr": 0.3}, DEFAULT)
