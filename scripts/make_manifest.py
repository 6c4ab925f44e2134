"""Write data/MANIFEST.json: every external dataset the local, study and paper profiles read.

For each dataset: its folder under the data folder, the files the loaders read with their size,
sha256 and record count, counts of the whole set, the licence, and where to get it. Sizes, hashes
and counts are measured on a data folder holding the copies the committed results were computed
from (the folder `compsense.core.paths.local_data_dir` finds, or --data-dir); nothing else is read from
it. The descriptions below are the project's own. Entries of sets that load from the hub (NanoBEIR,
NQ pairs) list no files. `python -m compsense doctor` checks a data folder against this file.

    python scripts/make_manifest.py [--data-dir /path/to/data]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compsense.core.paths import MANIFEST, SMOKE_DATA_DIR, local_data_dir
from compsense.core.storage import sha256_file

PROFILES = ("local", "study", "paper")
SUGARCREPE = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")

DATASETS = {
    "mrpc": {
        "name": "Microsoft Research Paraphrase Corpus (MRPC), original MSR files",
        "files": ["msr_paraphrase_train.txt", "msr_paraphrase_test.txt", "dev_ids.tsv"],
        "licence": "Microsoft Research licence terms (not an open licence): research use; do not redistribute",
        "upstream": "Dolan & Brockett 2005; GLUE task MRPC (nyu-mll/glue, config mrpc)",
        "get": "Microsoft's MRPC download (https://www.microsoft.com/en-us/download/details.aspx?id=52398), "
        "or GLUE's download script, which writes msr_paraphrase_train.txt, msr_paraphrase_test.txt and "
        "dev_ids.tsv; the copy measured here came from github.com/F0restL1n/BERT at commit "
        "0d0288be08079531c7b3a85af3d532f9adb0f13a, glue_data/MRPC/",
    },
    "stsb": {
        "name": "STS Benchmark (original SemEval files with gold scores)",
        "files": ["sts-train.tsv", "sts-dev.tsv", "sts-test.tsv"],
        "licence": "scores CC BY-SA 4.0; each sentence keeps its source's licence (the release's LICENSE.txt)",
        "upstream": "Cer et al. 2017, http://ixa2.si.ehu.eus/stswiki/index.php/STSbenchmark",
        "get": "the Stsbenchmark.tar.gz of the STS wiki (sts-train/dev/test.tsv); the copy measured here "
        "came from github.com/F0restL1n/BERT at commit 0d0288be08079531c7b3a85af3d532f9adb0f13a, "
        "glue_data/STS-B/original/",
    },
    "sugarcrepe": {
        "name": "SugarCrepe caption near-misses (text only)",
        "files": [f"{s}.json" for s in SUGARCREPE],
        "licence": "MIT (the repository); the captions come from COCO 2017 val annotations, CC BY 4.0",
        "upstream": "Hsieh et al., NeurIPS 2023 Datasets and Benchmarks",
        "get": "github.com/RAIVNLab/sugar-crepe, data/*.json (measured at commit "
        "0047054b243992f0fad63d6f64f7544862daf846)",
    },
    "condaqa": {
        "name": "CondaQA dev split (passages with a negation cue, their crowd edits, and questions)",
        "files": ["condaqa_dev.jsonl"],
        "licence": "Apache 2.0",
        "upstream": "Ravichander et al., EMNLP 2022; HF lasha-nlp/CONDAQA",
        "get": "github.com/AbhilashaRavichander/CondaQA, data/condaqa_dev.json (one JSON object per line; "
        "save it as condaqa_dev.jsonl; measured at commit bd4857f1f2819937f1505925ad8c809544e8e5ef)",
    },
    "nfcorpus": {
        "name": "BEIR NFCorpus (full set, not NanoNFCorpus), with its train qrels",
        "files": ["corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/dev.tsv", "qrels/test.tsv"],
        "licence": "not stated in the release; texts from NutritionFacts.org and PubMed: research evaluation use",
        "upstream": "Boteva et al., ECIR 2016; BEIR id BeIR/nfcorpus",
        "get": "BEIR's nfcorpus.zip (https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/"
        "nfcorpus.zip, md5 a89dba18a62ef92f7d323ec890a0d38d), unzipped as it is",
    },
    "scifact": {
        "name": "BEIR SciFact (full set, not NanoSciFact)",
        "files": ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv"],
        "licence": "CC BY-NC 2.0 (non-commercial)",
        "upstream": "Wadden et al., EMNLP 2020 (allenai/scifact); BEIR id BeIR/scifact",
        "get": "BEIR's scifact.zip (https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/"
        "scifact.zip). The copy measured here was rebuilt from allenai/scifact's CSV release (corpus "
        "_id/title/text with the abstract's sentences joined by one space; claims of train + validation "
        "as queries; cited_doc_ids as qrels, validation -> test): the same counts as BEIR's, but "
        "not necessarily the same bytes, so a BEIR copy can fail the sha256 check while holding the "
        "same records",
    },
}
HUB_ONLY = {
    "nanobeir": {
        "name": "NanoBEIR (13 sets of about 50 queries), the paper's evaluation",
        "licence": "each set keeps its BEIR source's licence",
        "upstream": "zeta-alpha-ai/Nano*; sentence-transformers/NanoBEIR-en",
        "get": "the hub (HF_HUB_OFFLINE=0), or a local copy under <data folder>/nanobeir/<NanoName>/"
        "{corpus,queries,qrels}.parquet (see compsense.data.datasets.load_nanobeir)",
    },
    "nq": {
        "name": "Natural Questions (query, answer-passage) pairs, the paper's Model A training data",
        "licence": "CC BY-SA 3.0",
        "upstream": "Kwiatkowski et al. 2019; sentence-transformers/natural-questions",
        "get": "the hub (HF_HUB_OFFLINE=0), or a local .jsonl/.parquet copy given as the profile's nq_path",
    },
}


def lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8-sig").split("\n") if line.strip()]


def records(name: str, rel: str, path: Path) -> int:
    if name == "sugarcrepe":
        return len(json.loads(path.read_text(encoding="utf-8")))
    n = len(lines(path))
    return n - 1 if rel.startswith(("msr_", "qrels/")) else n


def counts(name: str, folder: Path) -> dict:
    if name in ("nfcorpus", "scifact"):
        out = {"docs": len(lines(folder / "corpus.jsonl")), "queries": len(lines(folder / "queries.jsonl"))}
        for qrels in sorted((folder / "qrels").glob("*.tsv")):
            rows = [line.split("\t") for line in lines(qrels)[1:]]
            out[f"qrels_{qrels.stem}"] = {"rows": len(rows), "queries": len({r[0] for r in rows})}
        return out
    if name == "mrpc":
        out = {}
        for split in ("train", "test"):
            labels = [line.split("\t")[0] for line in lines(folder / f"msr_paraphrase_{split}.txt")[1:]]
            out[split] = {"pairs": len(labels), "paraphrase": labels.count("1"), "not_paraphrase": labels.count("0")}
        out["glue_dev_ids"] = len(lines(folder / "dev_ids.tsv"))
        return out
    if name == "condaqa":
        rows = [json.loads(line) for line in lines(folder / "condaqa_dev.jsonl")]
        return {
            "rows": len(rows),
            "passages": len({r["PassageID"] for r in rows}),
            "questions": len({(r["PassageID"], r["QuestionID"]) for r in rows}),
        }
    if name == "stsb":
        return {split: {"pairs": len(lines(folder / f"sts-{split}.tsv"))} for split in ("train", "dev", "test")}
    return {"examples": sum(records(name, f"{s}.json", folder / f"{s}.json") for s in SUGARCREPE)}


def used_by() -> dict[str, dict[str, list[str]]]:
    """{dataset: {profile: [stages]}} as `compsense doctor` computes what each profile reads."""
    from compsense.doctor import profile_data_needs

    out: dict[str, dict[str, list[str]]] = {}
    for profile in PROFILES:
        for name, stages in profile_data_needs(profile).items():
            out.setdefault(name, {})[profile] = sorted(stages)
    return out


def build(data_dir: Path) -> dict:
    needs = used_by()
    datasets = {}
    for name, meta in DATASETS.items():
        folder = data_dir / name
        files = {
            rel: {
                "bytes": (folder / rel).stat().st_size,
                "sha256": sha256_file(folder / rel),
                "records": records(name, rel, folder / rel),
            }
            for rel in meta["files"]
        }
        datasets[name] = {
            "name": meta["name"],
            "folder": name,
            "used_by": needs.get(name, {}),
            "files": files,
            "counts": counts(name, folder),
            "licence": meta["licence"],
            "upstream": meta["upstream"],
            "get": meta["get"],
        }
    for name, meta in HUB_ONLY.items():
        datasets[name] = {
            "name": meta["name"],
            "folder": name if name == "nanobeir" else None,
            "used_by": needs.get(name, {}),
            "files": {},
            "licence": meta["licence"],
            "upstream": meta["upstream"],
            "get": meta["get"],
        }
    return {
        "about": "External datasets the local, study and paper profiles read from the data folder "
        "(COMPSENSE_DATA_DIR, a profile's data_dir, or the nearest shared/data). They are not in the "
        "repository: their licences do not allow it. Sizes, sha256 and counts are of the copies the "
        "committed results were computed from; `python -m compsense doctor --profile local` checks "
        "a data folder against them. Written by scripts/make_manifest.py.",
        "smoke": {
            "name": "compsense smoke data: the project's own sentences, in the layouts of mrpc, stsb, "
            "nfcorpus, scifact, sugarcrepe and condaqa",
            "folder": SMOKE_DATA_DIR,
            "licence": "the project's (LICENSE, MIT): every sentence was written by scripts/make_smoke_data.py",
            "get": "in the repository; re-create with `python scripts/make_smoke_data.py` (tests/test_smoke_data.py "
            "checks that the script reproduces the committed files byte for byte)",
            "used_by": {"smoke": ["all"]},
        },
        "datasets": datasets,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None, help="the data folder to measure (default: as the loaders find it)")
    parser.add_argument("--out", default=str(ROOT / MANIFEST))
    args = parser.parse_args(argv)
    manifest = build(local_data_dir(args.data_dir))
    Path(args.out).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(manifest['datasets'])} datasets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
