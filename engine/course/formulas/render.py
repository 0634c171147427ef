"""Formula rows as markdown: the tables every cheat sheet shows, the sheets' sections, the legend.

Pure string work (no marimo): a sheet passes the strings to ``mo.md``. Each table row shows the
name (and the row's note), the formula as inline LaTeX, and the three snippets verbatim. Links
to other pages come from :mod:`engine.course.toc`, as seen from the sheet that draws them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

from .. import toc
from .core import FormulaRow

__all__ = [
    "LEGEND",
    "KIND_NOTES",
    "table_md",
    "sheet_sections",
    "sheet_md",
    "EXTRA_SECTIONS",
    "links_md",
    "hub_section_md",
    "search_found",
    "search_md",
]

LEGEND = (
    "Every row is checked by the tests: the NumPy, engine and PyTorch snippets run on random "
    "inputs and must agree. Namespaces: **NumPy** `import numpy as np, math` (and "
    "`sliding_window_view`); **engine** `import engine; import engine.functional as F; "
    "from engine import nn, optim, metrics, shapes, attention, diffusion, vae`; **PyTorch** "
    "`import torch; import torch.nn.functional as F; from torch import nn, optim`. "
    "In gradient rows, `g` is the upstream gradient ∂L/∂r."
)

KIND_NOTES = {
    "update": "NumPy: one step (t = 1, 2, …; state starts at 0). engine/PyTorch: build once, "
    "then `opt.zero_grad(); loss.backward(); opt.step()` per batch.",
    "schedule": "η at step t = 0, 1, …; engine/PyTorch: `scheduler.step()` after each `opt.step()`.",
}

# Rows a sheet shows under its own headings besides its own rows (borrowed from other sheets).
EXTRA_SECTIONS = {
    "derivatives": (
        (
            "Activation functions (forward and gradient)",
            (
                "act.sigmoid",
                "act.sigmoid.grad",
                "act.tanh.exp2",
                "act.tanh.grad",
                "act.relu",
                "act.relu.grad",
                "act.leaky_relu",
                "act.leaky_relu.grad",
                "act.softmax",
            ),
        ),
        (
            "Optimizer and model functions",
            ("opt.sgd", "opt.adam", "opt.adamw", "opt.clip_grad_norm.total", "opt.clip_grad_norm", "opt.soft_update"),
        ),
    ),
}


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell (no pipes, no line breaks)."""
    return str(text).replace("|", r"\|").replace("\n", " ")


def _code(code: str | None) -> str:
    if code is None:
        return "—"
    return "`" + _cell(code) + "`"


def _default_link(from_id: str | None) -> Callable[[str], str]:
    return lambda id: toc.link(id, from_id=from_id)


def table_md(rows: Iterable[FormulaRow], sheet: str | None = None, link: Callable | None = None) -> str:
    """A markdown table of ``rows`` as drawn on ``sheet``.

    A row from another sheet gets a link to its home sheet (``link(id)`` gives the URL; by default
    :func:`engine.course.link` as seen from ``sheet``).
    """
    rows = list(rows)
    if not rows:
        return "_No formula matches._"
    link = link or _default_link(sheet)
    lines = ["| | Formula | NumPy | engine | PyTorch |", "|:--|:--|:--|:--|:--|"]
    for r in rows:
        name = f"**{_cell(r.name)}**"
        notes = " ".join(n for n in (r.notes, KIND_NOTES.get(r.kind, "")) if n)
        if notes:
            name += f"<br><small>{_cell(notes)}</small>"
        if sheet is not None and r.sheet != sheet:
            name += f"<br><small>→ [{_cell(toc.entry(r.sheet).title)}]({link(r.sheet)})</small>"
        lines.append(f"| {name} | ${_cell(r.latex)}$ | {_code(r.numpy)} | {_code(r.engine)} | {_code(r.torch)} |")
    return "\n".join(lines)


def sheet_sections(sheet: str) -> list:
    """``[(heading, rows), ...]`` for a focused sheet: its own rows grouped by section (in order
    of first appearance), then the sections it borrows (:data:`EXTRA_SECTIONS`)."""
    from . import row, rows

    sections: dict = {}
    for r in rows(sheet):
        sections.setdefault(r.section, []).append(r)
    out = [(title, tuple(rs)) for title, rs in sections.items()]
    for title, ids in EXTRA_SECTIONS.get(sheet, ()):
        out.append((title, tuple(row(i) for i in ids)))
    return out


def sheet_md(sheet: str) -> str:
    """A focused sheet's tables: the legend, then one ``## heading`` and table per section."""
    tables = [f"## {title}\n\n{table_md(rows, sheet=sheet)}" for title, rows in sheet_sections(sheet)]
    return "\n\n".join([LEGEND, *tables])


def links_md(
    notebooks: Iterable[str] = (), sheets: Iterable[str] = (), from_id: str | None = None, link: Callable | None = None
) -> str:
    """'Explained in: [notebook] · Cheat sheet: [sheet]' with course titles and links."""
    link = link or _default_link(from_id)
    parts = []
    notebooks, sheets = list(notebooks), list(sheets)
    if notebooks:
        parts.append("Explained in the notebook: " + ", ".join(f"[{toc.entry(i).title}]({link(i)})" for i in notebooks))
    if sheets:
        parts.append("Cheat sheet: " + ", ".join(f"[{toc.entry(i).title}]({link(i)})" for i in sheets))
    return " · ".join(parts)


def hub_section_md(
    key: str, query: str = "", prose: str = "", from_id: str = "deep_learning", link: Callable | None = None
) -> str:
    """One hub section as markdown: heading, links, the sheet's ``prose`` and the rows matching
    ``query``.

    Returns '' when a query is given and no row of the section matches it (the hub hides the
    section); the training-loop section, which has no rows, shows only for an empty query or a
    query its title matches.
    """
    from . import row, search
    from .deep_learning import HUB_SECTIONS, hub_section

    section = hub_section(key)
    number = [s.key for s in HUB_SECTIONS].index(key) + 1
    rows = [row(i) for i in section.rows]
    matching = list(search(query, rows)) if query else rows
    if query and not matching and not all(w in section.title.lower() for w in query.lower().split()):
        return ""
    parts = [
        f"## {number}. {section.title}",
        links_md(section.notebooks, section.sheets, from_id, link),
        inspect.cleandoc(prose),
    ]
    if rows:
        parts.append(table_md(matching, sheet=from_id, link=link))
    return "\n\n".join(p for p in parts if p)


def search_found(query: str, from_id: str = "deep_learning") -> dict:
    """What a search on the hub finds, as rows: ``here`` (the matches on this page, of ``on_page``
    rows), ``everywhere`` (on all sheets) and ``elsewhere`` (the matches only on focused sheets)."""
    from . import search
    from .deep_learning import HUB_SECTIONS

    on_hub = {i for s in HUB_SECTIONS for i in s.rows}
    everywhere = search(query)
    return {
        "on_page": len(on_hub),
        "here": [r for r in everywhere if r.id in on_hub or r.sheet == from_id],
        "everywhere": list(everywhere),
        "elsewhere": [r for r in everywhere if r.id not in on_hub and r.sheet != from_id],
    }


def search_md(query: str, from_id: str = "deep_learning", link: Callable | None = None) -> str:
    """A summary of a search (:func:`search_found`): how many rows match on the hub and on every
    sheet, with the matches that live only on the focused sheets listed as a table."""
    from . import ROWS

    query = str(query or "").strip()
    if not query:
        return ""
    found = search_found(query, from_id)
    head = (
        f"**{len(found['here'])}** of {found['on_page']} rows on this page match “{_cell(query)}”; "
        f"**{len(found['everywhere'])}** of {len(ROWS)} on all sheets."
    )
    if not found["elsewhere"]:
        return head
    return head + "\n\nOnly on the focused sheets:\n\n" + table_md(found["elsewhere"], sheet=from_id, link=link)
