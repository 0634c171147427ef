"""Learning-rate schedules against torch.optim.lr_scheduler: the same 30 values (rtol 1e-10)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from oracle import require_torch

import engine
from engine import nn, optim
from engine.optim import lr_scheduler as sched

STEPS = 30
RTOL = 1e-10

# Each factory takes the scheduler module (engine's or torch's: same names) and an optimizer.
FACTORIES = {
    "StepLR": lambda L, o: L.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda L, o: L.MultiStepLR(o, milestones=[5, 12, 12, 20], gamma=0.3),
    "ConstantLR": lambda L, o: L.ConstantLR(o, factor=0.25, total_iters=4),
    "LinearLR-default": lambda L, o: L.LinearLR(o),
    "LinearLR-warmup": lambda L, o: L.LinearLR(o, start_factor=0.1, end_factor=0.5, total_iters=10),
    "ExponentialLR": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "PolynomialLR": lambda L, o: L.PolynomialLR(o, total_iters=20, power=2.0),
    "Cosine-T10-past-Tmax": lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "Cosine-T7": lambda L, o: L.CosineAnnealingLR(o, T_max=7),
    "Cosine-T30": lambda L, o: L.CosineAnnealingLR(o, T_max=30, eta_min=1e-4),
    "LambdaLR": lambda L, o: L.LambdaLR(o, lr_lambda=lambda e: 0.95**e / (1 + 0.1 * e)),
    "MultiplicativeLR": lambda L, o: L.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "OneCycleLR": lambda L, o: L.OneCycleLR(o, max_lr=0.5, total_steps=STEPS),
    "OneCycleLR-groups-linear": lambda L, o: L.OneCycleLR(
        o, max_lr=[0.5, 0.2], epochs=3, steps_per_epoch=10, pct_start=0.25, anneal_strategy="linear"
    ),
    "OneCycleLR-three-phase": lambda L, o: L.OneCycleLR(
        o, max_lr=1.0, total_steps=STEPS + 5, three_phase=True, div_factor=10.0, final_div_factor=100.0
    ),
    "Sequential-warmup-cosine": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=5), L.CosineAnnealingLR(o, T_max=25)], milestones=[5]
    ),
    "Sequential-three": lambda L, o: L.SequentialLR(
        o,
        [L.ConstantLR(o, factor=0.5, total_iters=3), L.ExponentialLR(o, gamma=0.9), L.StepLR(o, 4)],
        milestones=[6, 15],
    ),
    "Chained": lambda L, o: L.ChainedScheduler([L.ExponentialLR(o, gamma=0.95), L.StepLR(o, step_size=5, gamma=0.5)]),
}


def _param_groups(lib, params):
    return [{"params": params[:1], "lr": 0.1}, {"params": params[1:], "lr": 0.03}]


ORDER_WARNING = r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"


def _engine_opt(kind="sgd"):
    params = [nn.Parameter(np.zeros(2)), nn.Parameter(np.zeros(3))]
    groups = _param_groups(None, params)
    return optim.SGD(groups, lr=0.1, momentum=0.9) if kind == "sgd" else optim.Adam(groups, lr=0.1)


def _torch_opt(torch, kind="sgd"):
    params = [
        torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)),
        torch.nn.Parameter(torch.zeros(3, dtype=torch.float64)),
    ]
    groups = _param_groups(None, params)
    return torch.optim.SGD(groups, lr=0.1, momentum=0.9) if kind == "sgd" else torch.optim.Adam(groups, lr=0.1)


def _run(scheduler, opt, metrics=None):
    """Learning rates (and momenta) of every group at steps 0..STEPS-1."""
    lrs, moms = [], []
    for i in range(STEPS):
        lrs.append(list(scheduler.get_last_lr()))
        assert lrs[-1] == [g["lr"] for g in opt.param_groups]
        moms.append([g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups])
        opt.step()
        scheduler.step() if metrics is None else scheduler.step(metrics[i])
    return np.array(lrs, dtype=float), np.array(moms, dtype=float)


def _torch_run(torch, make, kind="sgd", metrics=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        topt = _torch_opt(torch, kind)
        return _run(make(torch.optim.lr_scheduler, topt), topt, metrics)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_schedule_matches_torch(name):
    torch = require_torch()
    make = FACTORIES[name]
    opt = _engine_opt()
    lrs, moms = _run(make(sched, opt), opt)
    t_lrs, t_moms = _torch_run(torch, make)
    np.testing.assert_allclose(lrs, t_lrs, rtol=RTOL, atol=0)
    np.testing.assert_allclose(moms, t_moms, rtol=RTOL, atol=0)  # OneCycleLR cycles the momentum
    assert len(np.unique(lrs[:, 0])) > 1  # the schedule does change the rate


def test_one_cycle_cycles_adam_beta1_like_torch():
    torch = require_torch()
    make = FACTORIES["OneCycleLR"]
    opt = _engine_opt("adam")
    lrs, betas = _run(make(sched, opt), opt)
    t_lrs, t_betas = _torch_run(torch, make, "adam")
    np.testing.assert_allclose(lrs, t_lrs, rtol=RTOL)
    np.testing.assert_allclose(betas, t_betas, rtol=RTOL)
    assert betas.min() == pytest.approx(0.85, abs=1e-3) and betas.max() == pytest.approx(0.95)


def test_one_cycle_past_total_steps_is_an_error():
    opt = _engine_opt()
    s = sched.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    with pytest.warns(UserWarning, match=ORDER_WARNING):  # no optimizer step here: torch's warning, once
        s.step()
    for _ in range(2):
        s.step()
    with pytest.raises(ValueError, match="total_steps is 3"):
        s.step()


METRICS = [
    1.0,
    0.9,
    0.95,
    0.9,
    0.92,
    0.93,
    0.94,
    0.8,
    0.85,
    0.85,
    0.85,
    0.85,
    0.7,
    0.7,
    0.70001,
    0.7,
    0.9,
    0.9,
    0.9,
    0.9,
    0.6,
    0.6,
    0.6,
    0.6,
    0.6,
    0.6,
    0.6,
    0.6,
    0.6,
    0.6,
]

PLATEAU = {
    "min-rel": lambda L, o: L.ReduceLROnPlateau(o, patience=2),
    "min-abs-cooldown": lambda L, o: L.ReduceLROnPlateau(
        o, factor=0.5, patience=1, threshold=0.05, threshold_mode="abs", cooldown=2, min_lr=0.01
    ),
    "max-rel-minlrs": lambda L, o: L.ReduceLROnPlateau(
        o, mode="max", factor=0.3, patience=0, threshold=0.01, min_lr=[0.005, 0.02]
    ),
    "max-abs": lambda L, o: L.ReduceLROnPlateau(o, mode="max", patience=3, threshold_mode="abs", threshold=0.0),
}


@pytest.mark.parametrize("name", list(PLATEAU))
def test_reduce_on_plateau_matches_torch(name):
    torch = require_torch()
    make = PLATEAU[name]
    opt = _engine_opt()
    lrs, _ = _run(make(sched, opt), opt, METRICS)
    t_lrs, _ = _torch_run(torch, make, metrics=METRICS)
    np.testing.assert_allclose(lrs, t_lrs, rtol=RTOL, atol=0)
    assert lrs[-1, 0] < lrs[0, 0]


def test_reduce_on_plateau_hand_example():
    # patience 1: the 2nd consecutive epoch without improvement halves the rate
    opt = _engine_opt()
    s = sched.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    seen = []
    for m in [1.0, 1.0, 1.0, 0.5, 0.6, 0.7]:
        s.step(m)
        seen.append(s.get_last_lr()[0])
    assert seen == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.05, 0.025])
    with pytest.raises(ValueError, match="NaN"):
        s.step(float("nan"))


def test_cosine_closed_form_within_first_half_period():
    opt = _engine_opt()
    lrs = _run(sched.CosineAnnealingLR(opt, T_max=10, eta_min=0.001), opt)[0][:, 0]
    t = np.arange(11)
    np.testing.assert_allclose(lrs[:11], 0.001 + (0.1 - 0.001) * (1 + np.cos(np.pi * t / 10)) / 2, rtol=1e-12)
    np.testing.assert_allclose(lrs[12], lrs[8], rtol=1e-10)  # past T_max the cosine climbs back


def test_warmup_cosine_equals_torch_sequential():
    torch = require_torch()
    opt = _engine_opt()
    lrs, _ = _run(sched.warmup_cosine(opt, warmup_steps=6, total_steps=STEPS, start_factor=0.2, eta_min=1e-3), opt)

    def make(L, o):
        return L.SequentialLR(
            o,
            [L.LinearLR(o, start_factor=0.2, total_iters=6), L.CosineAnnealingLR(o, T_max=STEPS - 6, eta_min=1e-3)],
            milestones=[6],
        )

    np.testing.assert_allclose(lrs, _torch_run(torch, make)[0], rtol=RTOL)


def test_schedule_values_helper():
    values = sched.schedule_values(lambda o: sched.StepLR(o, step_size=3, gamma=0.5), 7, lr=1.0)
    np.testing.assert_allclose(values, [1, 1, 1, 0.5, 0.5, 0.5, 0.25])
    plateau = sched.schedule_values(
        lambda o: sched.ReduceLROnPlateau(o, patience=0, factor=0.5), 4, lr=1.0, metrics=[1.0, 2.0, 3.0, 4.0]
    )
    np.testing.assert_allclose(plateau, [1.0, 1.0, 0.5, 0.25])
    with pytest.raises(ValueError, match="metrics"):
        sched.schedule_values(lambda o: sched.ReduceLROnPlateau(o), 4)


def test_state_dict_round_trip_continues_identically(tmp_path):
    opt = _engine_opt()
    s = FACTORIES["Sequential-warmup-cosine"](sched, opt)
    with pytest.warns(UserWarning, match=ORDER_WARNING):  # each inner scheduler's first step, no optimizer step
        for _ in range(8):
            s.step()
    engine.save({"sched": s.state_dict(), "optim": opt.state_dict()}, tmp_path / "s.npz")
    expected = []
    for _ in range(10):
        s.step()
        expected.append(s.get_last_lr())

    opt2 = _engine_opt()
    s2 = FACTORIES["Sequential-warmup-cosine"](sched, opt2)
    ckpt = engine.load(tmp_path / "s.npz")
    opt2.load_state_dict(ckpt["optim"])
    s2.load_state_dict(ckpt["sched"])
    got = []
    for _ in range(10):
        s2.step()
        got.append(s2.get_last_lr())
    assert got == expected


def test_plateau_state_dict_with_infinite_best_saves(tmp_path):
    opt = _engine_opt()
    s = sched.ReduceLROnPlateau(opt)
    engine.save(s.state_dict(), tmp_path / "p.npz")
    assert math.isinf(engine.load(tmp_path / "p.npz")["best"])


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda o: sched.StepLR(o, step_size=0), "step_size"),
        (lambda o: sched.CosineAnnealingLR(o, T_max=0), "T_max"),
        (lambda o: sched.LinearLR(o, start_factor=0.0), "start_factor"),
        (lambda o: sched.OneCycleLR(o, max_lr=0.1), "total_steps"),
        (lambda o: sched.OneCycleLR(o, max_lr=[0.1], total_steps=5), "max_lr"),
        (lambda o: sched.ReduceLROnPlateau(o, factor=1.5), "factor"),
        (lambda o: sched.ReduceLROnPlateau(o, mode="up"), "mode"),
        (lambda o: sched.SequentialLR(o, [sched.StepLR(o, 2)], milestones=[3]), "milestone"),
    ],
)
def test_bad_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make(_engine_opt())


def test_scheduler_needs_an_optimizer():
    with pytest.raises(TypeError, match="Optimizer"):
        sched.StepLR(object(), step_size=2)
