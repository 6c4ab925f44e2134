"""The README and docs/ link to files that exist: the README is short and points into docs/, so a
moved page or figure must not leave a dead link."""

from __future__ import annotations

import re

import pytest

from compsense.core.paths import repo_root

DOCUMENTS = [
    "README.md",
    "CONTRIBUTING.md",
    *sorted(p.relative_to(repo_root()).as_posix() for p in (repo_root() / "docs").glob("*.md")),
]
LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_relative_link_resolves(document):
    path = repo_root() / document
    dead = [
        m["target"]
        for m in LINK.finditer(path.read_text(encoding="utf-8"))
        if not m["target"].startswith(("http://", "https://", "mailto:")) and not (path.parent / m["target"]).exists()
    ]
    assert not dead, f"{document}: links to missing files {dead}"
