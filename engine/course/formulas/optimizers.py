"""Rows of the optimizers sheet: update rules, gradient clipping, target updates, LR schedules.

Update rows (``kind='update'``) run several steps on a parameter p with a new random gradient at
each step; the NumPy snippet is the rule (t counts steps from 1, the state starts at 0), the
engine and PyTorch snippets build the optimizer. Schedule rows (``kind='schedule'``) compare the
closed form η_t with the scheduler's learning rate at every step t = 0, 1, ...

One formula of the seed list is corrected here: AdamW's decay uses θ *before* the step,
θ ← θ − ηλθ − η m̂/(√v̂ + ε), as PyTorch computes it; the global gradient norm is the square root
of the sum of squares.
"""

from __future__ import annotations

import numpy as np

from .core import N, sheet_row, spec

SHEET = "optimizers"
UPD = "Update rules"
CLIP = "Gradient clipping and target networks"
SCHED = "Learning-rate schedules"
STEPS = 5


_row = sheet_row(SHEET)


def _update(id, name, latex, numpy, engine, state, notes="", steps=STEPS, keywords=(), **hyper):
    """An update rule run ``steps`` times on p with gradients G[0], G[1], ...; PyTorch builds the
    optimizer with the engine's code."""
    return _row(
        id,
        UPD,
        name,
        latex,
        numpy,
        engine,
        inputs=spec(p=N(3, 4), G=N(steps, 3, 4), **hyper),
        notes=notes,
        kind="update",
        steps=steps,
        state=state,
        keywords=("optimizer", "step", *keywords),
    )


def _schedule(id, name, latex, numpy, engine, steps=20, notes="", rtol=1e-9, **hyper):
    """A learning-rate schedule over ``steps`` steps; PyTorch builds the scheduler with the engine's code."""
    return _row(
        id,
        SCHED,
        name,
        latex,
        numpy,
        engine,
        inputs=spec(**hyper),
        notes=notes,
        kind="schedule",
        steps=steps,
        rtol=rtol,
        keywords=("lr", "learning rate", "scheduler"),
    )


ADAM_MOMENTS = "m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g ** 2; "
ADAM_STEP = "lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)"
ADAM_HYPER = dict(lr=0.1, b1=0.8, b2=0.9, eps=1e-3)  # a large ε, so its place in the formula matters


def _adam(id, name, latex, numpy, engine, notes, **hyper):
    """An Adam-family rule: moments m and v from 0, with :data:`ADAM_HYPER`'s settings (and ``hyper``)."""
    return _update(id, name, latex, numpy, engine, {"m": 0.0, "v": 0.0}, notes, **hyper, **ADAM_HYPER)


def _hessian(rng):
    """A symmetric positive definite H = Q diag(½, 1, 2, 8) Qᵀ in a random basis: a quadratic
    bowl whose largest curvature is 8, well apart from the next (power iteration converges fast)."""
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    return {"H": q @ np.diag([0.5, 1.0, 2.0, 8.0]) @ q.T}


GLOBAL_NORM = "np.sqrt((g1 ** 2).sum() + (g2 ** 2).sum())"


def _global_norm(id, name, latex, numpy, engine, notes):
    """A row on two parameters whose gradients g1, g2 are clipped together by their global norm."""
    return _row(
        id,
        CLIP,
        name,
        latex,
        numpy,
        engine,
        inputs=spec(p1=N(3, 4), p2=N(5), g1=N(3, 4), g2=N(5), max_norm=1.0),
        notes=notes,
        grads={"p1": "g1", "p2": "g2"},
        keywords=("clip", "exploding"),
    )


ROWS = [
    # ---------------------------------------------------------------- update rules
    _update(
        "opt.sgd",
        "SGD",
        r"\theta \leftarrow \theta - \eta\, g",
        "p = p - lr * g",
        "optim.SGD([p], lr=lr)",
        {},
        lr=0.1,
        notes="g is the mini-batch gradient ∇θL; η sets the step length.",
    ),
    _update(
        "opt.momentum",
        "SGD with momentum",
        r"v \leftarrow \mu v + g,\quad \theta \leftarrow \theta - \eta\, v",
        "v = mu * v + g; p = p - lr * v",
        "optim.SGD([p], lr=lr, momentum=mu)",
        {"v": 0.0},
        lr=0.1,
        mu=0.9,
        notes="A running sum of past gradients: directions that keep agreeing build up speed, oscillations cancel.",
    ),
    _update(
        "opt.nesterov",
        "Nesterov momentum",
        r"v \leftarrow \mu v + g,\quad \theta \leftarrow \theta - \eta\,(g + \mu v)",
        "v = mu * v + g; p = p - lr * (g + mu * v)",
        "optim.SGD([p], lr=lr, momentum=mu, nesterov=True)",
        {"v": 0.0},
        lr=0.1,
        mu=0.9,
        notes="Looks ahead along the momentum before stepping.",
    ),
    _update(
        "opt.sgd_weight_decay",
        "SGD with weight decay (L2)",
        r"\theta \leftarrow \theta - \eta\,(g + \lambda\theta)",
        "p = p - lr * (g + wd * p)",
        "optim.SGD([p], lr=lr, weight_decay=wd)",
        {},
        lr=0.1,
        wd=0.1,
        notes="For plain SGD, decay and an L2 penalty ½λ‖θ‖² are the same update.",
    ),
    _update(
        "opt.rmsprop",
        "RMSprop",
        r"s \leftarrow \rho s + (1 - \rho)\,g^2,\quad \theta \leftarrow \theta - \frac{\eta\, g}{\sqrt{s} + \varepsilon}",
        "s = alpha * s + (1 - alpha) * g ** 2; p = p - lr * g / (np.sqrt(s) + eps)",
        "optim.RMSprop([p], lr=lr, alpha=alpha, eps=eps)",
        {"s": 0.0},
        lr=0.01,
        alpha=0.9,
        eps=1e-3,
        notes="Divides by a running RMS of the gradient: one step size per parameter.",
    ),
    _adam(
        "opt.adam",
        "Adam",
        r"m \leftarrow \beta_1 m + (1 - \beta_1) g,\ v \leftarrow \beta_2 v + (1 - \beta_2) g^2,\ "
        r"\hat m = \frac{m}{1 - \beta_1^t},\ \hat v = \frac{v}{1 - \beta_2^t},\ "
        r"\theta \leftarrow \theta - \frac{\eta\,\hat m}{\sqrt{\hat v} + \varepsilon}",
        ADAM_MOMENTS + "p = p - " + ADAM_STEP,
        "optim.Adam([p], lr=lr, betas=(b1, b2), eps=eps)",
        "Momentum (m) plus RMSprop (v); the bias correction undoes the zero start of m and v.",
    ),
    _update(
        "opt.adam.first_step",
        "Adam's first step (bias-corrected)",
        r"t = 1:\ \hat m = g,\ \hat v = g^2 \Rightarrow \theta \leftarrow \theta - \frac{\eta\, g}{\lvert g\rvert + \varepsilon} \approx \theta - \eta \operatorname{sign}(g)",
        "p = p - lr * g / (np.abs(g) + eps)",
        "optim.Adam([p], lr=lr, betas=(b1, b2), eps=eps)",
        {},
        notes="Whatever the gradient's size, every parameter moves by about η at the first step: "
        "without the correction, m = (1 − β₁)g and v = (1 − β₂)g² would give (1 − β₁)/√(1 − β₂) times that.",
        steps=1,
        keywords=("bias correction",),
        **ADAM_HYPER,
    ),
    _adam(
        "opt.adam_l2",
        "Adam with L2 (coupled decay)",
        r"g \leftarrow g + \lambda\theta,\ \text{then Adam}",
        "g = g + wd * p; " + ADAM_MOMENTS + "p = p - " + ADAM_STEP,
        "optim.Adam([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)",
        "The decay is divided by √v̂ like the gradient: large-gradient weights decay less.",
        wd=0.1,
    ),
    _adam(
        "opt.adamw",
        "AdamW (decoupled decay)",
        r"\theta \leftarrow \theta - \eta\lambda\theta - \frac{\eta\,\hat m}{\sqrt{\hat v} + \varepsilon}\quad(\theta\text{ before the step on the right})",
        ADAM_MOMENTS + "p = p - lr * wd * p - " + ADAM_STEP,
        "optim.AdamW([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)",
        "Every weight shrinks by the same factor 1 − ηλ, whatever its gradient.",
        wd=0.1,
    ),
    _row(
        "opt.stability",
        UPD,
        "Largest stable step of gradient descent",
        r"\theta \leftarrow \theta - \eta H\theta \text{ on } \tfrac12 \theta^\top H \theta \text{ converges iff } \eta < \frac{2}{\lambda_{\max}(H)}",
        "2 / np.linalg.eigvalsh(H).max()",
        "v = engine.ones(H.shape[0], dtype=engine.float64); [v := (H @ v) / (H @ v).norm() for _ in range(100)]; 2 / (v @ H @ v).item()",
        "2 / torch.linalg.eigvalsh(H).max()",
        _hessian,
        notes="Each eigen-direction is multiplied by 1 − ηλᵢ per step; the steepest one flips sign and "
        "grows once η > 2/λ_max. Near a minimum H is the loss's Hessian. The engine finds λ_max "
        "by power iteration.",
        keywords=("learning rate", "curvature", "hessian", "divergence", "eigenvalue"),
    ),
    # ---------------------------------------------------------------- clipping and target nets
    _global_norm(
        "opt.clip_grad_norm.total",
        "Global gradient norm",
        r"\lVert \nabla \rVert_2 = \sqrt{\textstyle\sum_{\theta}\sum_i (\nabla\theta_i)^2}",
        GLOBAL_NORM,
        "nn.utils.clip_grad_norm_([p1, p2], max_norm)",
        "Over all parameters together; the square root makes it a length.",
    ),
    _global_norm(
        "opt.clip_grad_norm",
        "Clip gradients by global norm",
        r"\nabla\theta \leftarrow \nabla\theta \cdot \min\left(1, \frac{c}{\lVert \nabla \rVert_2 + \epsilon}\right)",
        f"k = min(1.0, max_norm / ({GLOBAL_NORM} + 1e-6)); (g1 * k, g2 * k)",
        "nn.utils.clip_grad_norm_([p1, p2], max_norm); (p1.grad, p2.grad)",
        "Rescales every gradient by one factor, so the direction is kept; call it between backward() and step().",
    ),
    _row(
        "opt.clip_grad_value",
        CLIP,
        "Clip gradients by value",
        r"\nabla\theta_i \leftarrow \operatorname{clip}(\nabla\theta_i, -c, c)",
        "np.clip(g1, -c, c)",
        "nn.utils.clip_grad_value_([p1], c); p1.grad",
        inputs=spec(p1=N(3, 4), g1=N(3, 4, scale=2.0), c=0.5),
        notes="Element by element: changes the gradient's direction.",
        grads={"p1": "g1"},
        keywords=("clip",),
    ),
    _row(
        "opt.soft_update",
        CLIP,
        "Soft update of a target network",
        r"\theta_{target} \leftarrow \tau\,\theta_{agent} + (1 - \tau)\,\theta_{target}",
        "tau * theta_a + (1 - tau) * theta_t",
        "nn.utils.soft_update([theta_t], [theta_a], tau); theta_t",
        "torch.lerp(theta_t, theta_a, tau)",
        spec(theta_t=N(3, 4), theta_a=N(3, 4), tau=0.05),
        notes="Polyak averaging (DQN, DDPG): the target follows the trained network slowly. The "
        "engine also takes two Modules.",
        grad=("theta_t", "theta_a"),
        keywords=("dqn", "polyak", "ema", "target model"),
    ),
    # ---------------------------------------------------------------- schedules
    _schedule(
        "sched.step",
        "StepLR",
        r"\eta_t = \eta\,\gamma^{\lfloor t / s \rfloor}",
        "lr * gamma ** (t // s)",
        "optim.lr_scheduler.StepLR(opt, step_size=s, gamma=gamma)",
        lr=0.1,
        s=4,
        gamma=0.5,
        notes="Divide the rate by a constant every s epochs.",
    ),
    _schedule(
        "sched.cosine",
        "Cosine annealing",
        r"\eta_t = \eta_{min} + \tfrac12(\eta_{max} - \eta_{min})\left(1 + \cos\frac{\pi t}{T}\right)",
        "eta_min + 0.5 * (lr - eta_min) * (1 + np.cos(np.pi * t / T))",
        "optim.lr_scheduler.CosineAnnealingLR(opt, T_max=T, eta_min=eta_min)",
        rtol=1e-7,
        lr=0.1,
        T=19,
        eta_min=0.001,
        notes="PyTorch updates it recursively; equal to the closed form up to rounding.",
    ),
    _schedule(
        "sched.warmup",
        "Linear warm-up",
        r"\eta_t = \eta\left(s + (1 - s)\,\frac{\min(t, n)}{n}\right)",
        "lr * (s + (1 - s) * np.minimum(t, n) / n)",
        "optim.lr_scheduler.LinearLR(opt, start_factor=s, total_iters=n)",
        rtol=1e-7,
        lr=0.1,
        s=0.01,
        n=8,
        notes="A ramp from a small rate to η over the first n steps: Adam's early v̂ is noisy.",
    ),
    _schedule(
        "sched.one_cycle",
        "One-cycle",
        r"\eta_t:\ \tfrac{\eta_{max}}{d} \nearrow \eta_{max} \text{ until } t = p\,T - 1,\ \text{then} \searrow \tfrac{\eta_{max}}{d\,f}",
        "np.interp(t, [0, pct * T - 1, T - 1], [max_lr / div, max_lr, max_lr / (div * final)])",
        "optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=T, pct_start=pct, anneal_strategy='linear', div_factor=div, final_div_factor=final, cycle_momentum=False)",
        rtol=1e-7,
        lr=0.1,
        max_lr=0.1,
        T=20,
        pct=0.3,
        div=25.0,
        final=1e4,
        notes="Warm up to max_lr, then anneal far below the start; step once per batch "
        "(the default anneal is a cosine, shown linear here).",
    ),
    _schedule(
        "sched.plateau",
        "Reduce on plateau",
        r"\eta \leftarrow f\,\eta \text{ after } p + 1 \text{ epochs without improvement}",
        "lr * factor ** (np.maximum(t - 1, 0) // (patience + 1))",
        "optim.lr_scheduler.ReduceLROnPlateau(opt, factor=factor, patience=patience)",
        lr=0.1,
        factor=0.5,
        patience=2,
        metric=lambda rng: np.full(20, 1.0),
        notes="The closed form is for a validation loss that never improves; step it with "
        "that loss: scheduler.step(val_loss).",
    ),
]
