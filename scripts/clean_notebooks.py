"""Strip outputs, execution counts and volatile metadata from notebooks before committing.

Usage: python scripts/clean_notebooks.py [notebooks/*.ipynb]   (default: every notebook in notebooks/)
tests/test_notebooks.py fails when a committed notebook is not clean.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

KEEP_NOTEBOOK_METADATA = {"kernelspec", "language_info"}


def clean(path: Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    before = nbformat.writes(nb)
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in KEEP_NOTEBOOK_METADATA}
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags")
        cell["metadata"] = {"tags": tags} if tags else {}
        if cell.cell_type == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    nbformat.validator.normalize(nb)
    after = nbformat.writes(nb)
    if after != before:
        path.write_text(after, encoding="utf-8")
        return True
    return False


if __name__ == "__main__":
    paths = [Path(p) for p in sys.argv[1:]] or sorted(Path(__file__).resolve().parent.parent.glob("notebooks/*.ipynb"))
    for p in paths:
        print(("cleaned " if clean(p) else "clean   ") + str(p))
