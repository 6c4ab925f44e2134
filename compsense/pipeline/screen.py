"""What the command line prints for a reader (`piece --list`, `estimate`, `doctor`): plain text that fits
a terminal of `WIDTH` columns, paragraphs wrapped and tables cut to fit, with the whole text one
`--verbose` away where a command has more to say."""

from __future__ import annotations

import textwrap

WIDTH = 100


def wrap(text: str, indent: str = "", first: str | None = None, width: int = WIDTH) -> str:
    """`text` as lines of at most `width` characters; `first` prefixes the first line (default `indent`),
    `indent` the others. Words longer than a line (a long path) are broken rather than overflow."""
    return textwrap.fill(
        " ".join(str(text).split()),
        width=width,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )


def cut(text: str, width: int) -> str:
    """`text` (one line) in at most `width` characters, ending in "…" where it was cut."""
    text = str(text)
    return text if len(text) <= width else text[: max(width - 1, 0)].rstrip() + "…"


def table(headers: list[str], rows: list[list], right=(), fit: int | None = None, width: int = WIDTH) -> str:
    """Columns of text separated by two spaces, `right` (indices) right-aligned. Where a line would pass
    `width`, column `fit` (default: the last) is cut to what is left, and every other cell to `width`."""
    cells = [[str(h) for h in headers]] + [["" if c is None else " ".join(str(c).split()) for c in r] for r in rows]
    n = len(headers)
    fit = n - 1 if fit is None else fit
    widths = [max(len(r[i]) for r in cells) for i in range(n)]
    room = width - 2 * (n - 1) - sum(w for i, w in enumerate(widths) if i != fit)
    widths[fit] = max(min(widths[fit], room), len(headers[fit]))
    lines = []
    for r in cells:
        parts = [cut(c, widths[i]) for i, c in enumerate(r)]
        parts = [p.rjust(widths[i]) if i in right else p.ljust(widths[i]) for i, p in enumerate(parts)]
        lines.append(cut("  ".join(parts).rstrip(), width))
    return "\n".join(lines)


def duration(seconds) -> str:
    """Seconds as a reader counts them: "45 s", "7.3 min", "2.4 h"; "–" for an unknown time."""
    if seconds is None or seconds != seconds:
        return "–"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
