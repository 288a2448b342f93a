"""Text from a results store made safe for the report's Markdown and CSV files.

Instance names, sources and error messages come from the user's files, so they may hold
anything: a newline or a ``|`` that splits a Markdown table row, raw HTML (``<script>``)
that a Markdown renderer passes through, or a leading ``=`` that a spreadsheet runs as a
formula (``=HYPERLINK(...)``) when it opens ``cells.csv``. ``index.html`` is escaped by
its template; these helpers cover the other two outputs.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: Characters a Markdown renderer reads as markup inside a table cell or list item.
_MARKDOWN_SPECIAL = "\\`*[]|"

#: HTML-significant characters, as entities (Markdown passes raw HTML through).
_HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}

#: A cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def markdown_text(value: Any) -> str:
    """``value`` as inert Markdown on one line.

    Every run of whitespace (newlines, carriage returns, the Unicode line and paragraph
    separators) becomes one space, so a table row or list item stays one line; ``&``,
    ``<`` and ``>`` become entities, and Markdown's markup characters are escaped with a
    backslash (``|`` no longer splits a table cell).

    >>> markdown_text("a\\n<script>| b")
    'a &lt;script&gt;\\\\| b'
    """
    text = " ".join(str(value).split())
    out = []
    for ch in text:
        if ch in _HTML_ENTITIES:
            out.append(_HTML_ENTITIES[ch])
        elif ch in _MARKDOWN_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def markdown_items(values: Any) -> list[str]:
    """A Markdown bullet list, one :func:`markdown_text` item per value."""
    return [f"- {markdown_text(v)}" for v in values]


def csv_text(value: Any) -> Any:
    """A CSV cell that no spreadsheet reads as a formula.

    Text starting with ``= + - @``, a tab or a carriage return gets a leading ``'``
    (the usual neutralisation, shown by spreadsheets as plain text); numbers and other
    values pass unchanged, so a negative number stays a number.

    >>> csv_text("=HYPERLINK(1)"), csv_text(-1.5), csv_text("ok")
    ("'=HYPERLINK(1)", -1.5, 'ok')
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with :func:`csv_text` applied to every text cell (a copy)."""
    out = frame.copy()
    for col in out.columns:
        # Every column: text may sit in an object or a string dtype (pandas >= 3).
        out[col] = out[col].map(csv_text)
    return out
