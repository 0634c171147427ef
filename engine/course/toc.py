"""The course's table of contents, and the links between its pages.

One list, :data:`ENTRIES`, names every notebook and cheat sheet (id, title, summary, kind, file,
topics). The hub cheat sheet, the navigation bar of each notebook, the site's index page and the
tests that every page exists and runs all read it, so a page is added or renamed here only.

Links work in the two places a page is read:

* **server** (``marimo run notebooks cheatsheets`` gallery, or ``marimo edit`` of the repository
  root): the gallery serves each file at ``?file=<path relative to the repository root>``, e.g.
  ``?file=notebooks/01_activations.py``; a relative ``?file=`` link stays on the same server.
* **site** (``marimo export html`` / ``html-wasm`` into ``_site/``): every page sits one folder
  deep, ``_site/notebooks/01_activations.html`` and ``_site/cheatsheets/<name>.html``, beside
  ``_site/index.html``; a link is the relative ``.html`` path, e.g. ``../cheatsheets/x.html``.

Which one applies is decided when the link is drawn (:func:`detect_mode`): a notebook served by a
marimo server has an HTTP request behind its session (``mo.app_meta().request`` is set); a static
export, a WebAssembly page and ``python notebook.py`` have none, and get the site's ``.html``
links. So a notebook just writes ``mo.md(toc.nav_md("01_activations"))`` and the same cell is
right in every setting.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

__all__ = [
    "Entry",
    "ENTRIES",
    "HUB_ID",
    "entry",
    "entries",
    "notebooks",
    "cheatsheets",
    "site_path",
    "detect_mode",
    "link",
    "nav_md",
    "MODES",
    "metadata",
]

MODES = ("auto", "server", "site")
HUB_ID = "deep_learning"
INDEX_ID = "index"  # the site's home page, _site/index.html (a link source, not an entry)


@dataclass(frozen=True)
class Entry:
    """One page of the course.

    ``id`` is the file's stem and the page's METADATA id; ``path`` is relative to the repository
    root; ``related`` names the cheat sheets a notebook points to (besides the hub).
    """

    id: str
    title: str
    summary: str
    kind: str  # 'notebook' | 'cheatsheet'
    path: str
    topics: tuple = ()
    related: tuple = ()


def _nb(id, title, summary, topics, related=()):
    return Entry(id, title, summary, "notebook", f"notebooks/{id}.py", tuple(topics), tuple(related))


def _cs(id, title, summary, topics, related=()):
    return Entry(id, title, summary, "cheatsheet", f"cheatsheets/{id}.py", tuple(topics), tuple(related))


ENTRIES: tuple = (
    _nb(
        "01_activations",
        "Activation functions",
        "ReLU to SwiGLU with their derivatives and ranges, softmax with temperature, a depth lab where "
        "gradients vanish or explode, residual paths and LayerNorm, and the linear pieces a ReLU "
        "network cuts the plane into.",
        [
            "activations",
            "initialisation",
            "softmax",
            "vanishing_gradients",
            "residual_connections",
            "normalisation",
            "linear_pieces",
        ],
        ["activation_functions", "derivatives"],
    ),
    _nb(
        "02_losses",
        "Loss functions",
        "Regression and classification losses with their gradients, robust fits with outliers, losses "
        "read as likelihoods, label smoothing and why losses take logits, KL divergence, the "
        "initial-loss check, and multi-label and imbalanced classes.",
        [
            "losses",
            "cross_entropy",
            "kl_divergence",
            "robust_regression",
            "label_smoothing",
            "likelihoods",
            "multi_label",
            "class_imbalance",
        ],
        ["loss_functions"],
    ),
    _nb(
        "03_backprop",
        "Backpropagation",
        "The chain rule walked in reverse on a computation graph, why reverse mode and what it keeps in "
        "memory, a dense layer's gradients by hand, the gradient check's V-shaped error, and an MLP "
        "playground on 2-D data.",
        ["backpropagation", "autograd", "chain_rule", "reverse_mode", "memory", "gradient_check", "mlp"],
        ["derivatives"],
    ),
    _nb(
        "04_optimizers",
        "Optimizers",
        "SGD, momentum, Nesterov, RMSprop, Adam and AdamW on loss surfaces, the condition number, "
        "bias correction, learning-rate schedules with the noise floor and a range test, weight decay "
        "and gradient clipping.",
        [
            "optimization",
            "sgd",
            "momentum",
            "adam",
            "condition_number",
            "lr_schedules",
            "noise_floor",
            "lr_range_test",
            "regularisation",
            "weight_decay",
            "gradient_clipping",
        ],
        ["optimizers"],
    ),
    _nb(
        "05_convolution",
        "Convolution",
        "Convolution arithmetic and (effective) receptive fields, im2col forward and backward, classic "
        "filters and depthwise-separable layers, translation equivariance, a small CNN reading "
        "handwritten digits against softmax-regression and MLP baselines, saliency maps, and the "
        "gradient through residual blocks.",
        [
            "convolution",
            "receptive_field",
            "effective_receptive_field",
            "im2col",
            "depthwise_separable",
            "equivariance",
            "cnn",
            "digits",
            "saliency",
            "residual_block",
        ],
        ["tensor_shapes", "derivatives"],
    ),
    _nb(
        "06_attention",
        "Attention",
        "Scaled dot-product attention, masks, multi-head shapes with the KV cache, RoPE and sinusoidal "
        "positions, cross-attention, a tiny attention model and a tiny Transformer.",
        ["attention", "transformer", "positional_encoding", "kv_cache", "cross_attention"],
        ["tensor_shapes"],
    ),
    _nb(
        "07_diffusion",
        "Diffusion models",
        "Noise schedules, the forward process in closed form, a small DDPM trained on 2-D data next to "
        "the exact reverse process, DDIM sampling in few steps, and classifier-free guidance.",
        ["diffusion", "generative_models", "ddpm", "ddim", "classifier_free_guidance"],
        [],
    ),
    _nb(
        "08_vae",
        "Variational autoencoders",
        "The reparameterisation trick, the KL term and the ELBO budget, posterior collapse and the "
        "aggregate posterior, a VAE on handwritten digits with its latent space, the IWAE bound, the "
        "amortisation gap, and a VAE against a DDPM on the same data.",
        [
            "vae",
            "generative_models",
            "elbo",
            "posterior_collapse",
            "aggregate_posterior",
            "iwae",
            "digits",
            "amortisation_gap",
            "diffusion",
        ],
        [],
    ),
    _cs(
        HUB_ID,
        "Deep learning essential formulas",
        "The hub: the training path from input to update, every formula family with NumPy, engine "
        "and PyTorch code checked to agree, and links to every notebook.",
        ["deep_learning", "neural_networks", "backpropagation", "optimization"],
        ["activation_functions", "loss_functions", "derivatives", "optimizers", "metrics", "tensor_shapes"],
    ),
    _cs(
        "activation_functions",
        "Activation functions",
        "Each activation and its derivative in LaTeX, NumPy, engine and PyTorch.",
        ["activations", "derivatives"],
        ["01_activations"],
    ),
    _cs(
        "loss_functions",
        "Loss functions",
        "Regression and classification losses with their gradients, in every spelling.",
        ["losses", "cross_entropy"],
        ["02_losses"],
    ),
    _cs(
        "derivatives",
        "Derivatives and gradients",
        "Every primitive's forward and gradient functions, the chain rule and the gradient check.",
        ["derivatives", "backpropagation", "autograd"],
        ["03_backprop"],
    ),
    _cs(
        "optimizers",
        "Optimizers and schedules",
        "Update rules from SGD to AdamW, gradient clipping and learning-rate schedules.",
        ["optimization", "lr_schedules", "regularisation"],
        ["04_optimizers"],
    ),
    _cs(
        "metrics",
        "Metrics",
        "Accuracy, precision, recall, F1, confusion matrix, ROC-AUC, R² and perplexity.",
        ["metrics", "evaluation"],
        [],
    ),
    _cs(
        "tensor_shapes",
        "Tensor shapes",
        "Dimension rules for dense, convolution and attention layers, with parameter counts.",
        ["shapes", "convolution", "attention"],
        ["05_convolution", "06_attention"],
    ),
)

_BY_ID = {e.id: e for e in ENTRIES}


def entry(id: str) -> Entry:
    """The entry with this id; a clear error listing the known ids otherwise."""
    try:
        return _BY_ID[id]
    except (KeyError, TypeError):
        raise ValueError(f"toc.entry: unknown id {id!r}; known ids: {', '.join(_BY_ID)}") from None


def metadata(id: str) -> dict:
    """A page's METADATA dict (id, name, summary, topics), the seed cheat sheet's format, from its
    entry here: the one source, so a notebook's header and the course's index never drift."""
    e = entry(id)
    return {"id": e.id, "name": e.title, "summary": e.summary, "topics": list(e.topics)}


def entries(kind: str | None = None) -> tuple:
    """All entries in course order, or only those of ``kind`` ('notebook' or 'cheatsheet')."""
    if kind is None:
        return ENTRIES
    if kind not in ("notebook", "cheatsheet"):
        raise ValueError(f"toc.entries: kind must be 'notebook', 'cheatsheet' or None, got {kind!r}")
    return tuple(e for e in ENTRIES if e.kind == kind)


def notebooks() -> tuple:
    return entries("notebook")


def cheatsheets() -> tuple:
    return entries("cheatsheet")


def site_path(id: str) -> str:
    """The page's file in the exported site, relative to ``_site/``: 'notebooks/01_activations.html'."""
    if id == INDEX_ID:
        return "index.html"
    return posixpath.splitext(entry(id).path)[0] + ".html"


def detect_mode() -> str:
    """'server' when a marimo server drew this page (its session has an HTTP request), else 'site'.

    A static ``marimo export html`` runs the notebook with no request, a WebAssembly page has none
    either, and neither has a server to answer ``?file=``: both get the ``.html`` links.
    """
    try:
        import marimo as mo

        return "server" if mo.app_meta().request is not None else "site"
    except Exception:  # no marimo, or not inside a marimo session
        return "site"


def link(id: str, from_id: str | None = None, mode: str = "auto") -> str:
    """URL of page ``id`` as seen from page ``from_id`` (default: any course page).

    mode 'server': ``?file=notebooks/01_activations.py`` (the gallery's form);
    mode 'site': the relative ``.html`` path inside ``_site/``, e.g. ``../notebooks/01_activations.html``
    (``from_id='index'`` for links on the home page: ``notebooks/01_activations.html``);
    mode 'auto' (default): :func:`detect_mode` picks one.
    """
    target = entry(id)
    if mode not in MODES:
        raise ValueError(f"toc.link: mode must be one of {MODES}, got {mode!r}")
    if mode == "auto":
        mode = detect_mode()
    if mode == "server":
        return f"?file={target.path}"
    # Every page lives one folder deep (notebooks/, cheatsheets/), the index at the root.
    if from_id is not None and from_id != INDEX_ID:
        entry(from_id)  # an unknown source is an error too
    return site_path(id) if from_id == INDEX_ID else "../" + site_path(id)


def _md_link(id: str, from_id: str, mode: str, label: str | None = None) -> str:
    return f"[{label or entry(id).title}]({link(id, from_id, mode)})"


def nav_md(id: str, mode: str = "auto") -> str:
    """Markdown navigation for page ``id``: previous / hub and related sheets / next.

    Notebooks get their neighbours in course order; cheat sheets link back to the hub and to the
    notebooks they summarise.
    """
    here = entry(id)
    if mode == "auto":
        mode = detect_mode()
    parts = []
    if here.kind == "notebook":
        order = [e.id for e in notebooks()]
        i = order.index(id)
        if i > 0:
            parts.append("← previous: " + _md_link(order[i - 1], id, mode))
    if id != HUB_ID:
        parts.append("cheat sheet: " + _md_link(HUB_ID, id, mode, "Deep learning formulas (hub)"))
    parts += [
        f"see also: {_md_link(r, id, mode)} ({entry(r).kind.replace('cheatsheet', 'cheat sheet')})"
        for r in here.related
    ]
    if here.kind == "notebook":
        if i + 1 < len(order):
            parts.append("next: " + _md_link(order[i + 1], id, mode) + " →")
    return " · ".join(parts)
