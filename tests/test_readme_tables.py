"""The README's result tables are generated from the committed tables (figures/tables/*.csv) by
`make readme-tables` (scripts/readme_tables.py), so they cannot drift from a run's numbers."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from compsense.core.paths import repo_root
from compsense.core.storage import read_csv
from scripts import load_script

T = load_script("readme_tables")
TABLES = repo_root() / "figures" / "tables"


def _csv(text: str) -> pd.DataFrame:
    """A table as its CSV gives it (the tables are read from CSV files)."""
    return read_csv(io.StringIO(text.strip()))


@pytest.mark.parametrize("document", T.DOCUMENTS)
def test_the_committed_documents_are_what_the_committed_tables_give(document):
    text = (repo_root() / document).read_text(encoding="utf-8")
    # Table 1 in both; a table whose runs are not yet made on the current code is left out
    assert {"table1"} <= {m.group("name") for m in T.MARKER.finditer(text)} <= set(T.TABLES)
    assert T.update(text, TABLES) == text, "run `make readme-tables`"
    assert T.main(["--check", "--readme", document]) == 0


def test_a_document_whose_tables_differ_fails_the_check_and_names_it(tmp_path, capsys):
    doc = tmp_path / "results.md"
    doc.write_text("<!-- table:table1 from figures/tables/table1.csv -->\n| stale |\n<!-- /table -->\n")
    assert T.main(["--check", "--tables", str(TABLES), "--readme", str(doc)]) == 1
    assert "Fix: make readme-tables" in capsys.readouterr().err
    assert T.main(["--tables", str(TABLES), "--readme", str(doc)]) == 0 and "| stale |" not in doc.read_text()


def test_numbers_round_half_up_from_their_decimals_with_a_true_minus():
    assert T.num(0.725, 2) == "0.73" and T.num("0.725", 2) == "0.73"  # binary 0.725 is 0.72499...
    assert T.num(-0.00251) == "−0.003" and T.num(0.007126, sign=True) == "+0.007"
    assert T.num(float("nan")) == T.DASH and T.num("") == T.DASH
    assert T.num("0.650 ± 0.071", 2) == "0.65"  # a separation cell: the mean
    assert T.num("0.650 ± 0.071 [0.601, 0.702]", 2) == "0.65" == T.num("0.650 [0.601, 0.702]", 2)
    # a pairwise cell keeps its interval (resampling anchors) in the README's separation table
    assert T._mean_std_cell("0.650 ± 0.071 [0.601, 0.702]") == "0.65 ± 0.07 [0.60, 0.70]"
    assert T._mean_std_cell("0.650 [0.601, 0.702]") == "0.65 [0.60, 0.70]"
    assert T._mean_std_cell("0.650 ± 0.001") == "0.65"
    assert [T.pvalue(p) for p in (0.0484, 0.1694, 0.1, 1.0, 0.0002)] == ["0.048", "0.17", "0.10", "1", "< 0.001"]


def test_separation_collapses_agreeing_checks_never_aucs():
    df = _csv("""
scorer,regime,train_data,size,negatives-heldout auc,negatives-heldout self_match
cosine Base,,,,0.056,1.0
cosine Model B,,,,0.253,1.0
F1,frozen,model_b,small,0.021,0.982
F1,end2end,model_b,small,0.021,0.979
F4,frozen,model_b,small,0.172,0.872
F4,end2end,model_b,small,0.191,0.875
F1,frozen,balanced,small,0.021,1.0
F1,end2end,balanced,small,0.030,1.0
""")
    lines = T.separation(df).splitlines()
    assert lines[2].startswith("| pooled cosine Base / B | 0.06 / 0.25 | – | – | – | – | 1.00 |")
    assert lines[3].startswith("| F1 MaxSim frozen / end2end (model_b) | 0.02 / 0.02 | – | – | – | – | 0.98 |")
    assert lines[4].startswith(
        "| F4 Transformer frozen / end2end (model_b) | 0.17 / 0.19 | – | – | – | – | 0.87 / 0.88 |"
    )
    # F1 frozen has no parameters of its own: the same function under balanced, shown once; its
    # end-to-end encoder was fine-tuned on balanced, so that row is shown
    assert lines[5].startswith("| F1 MaxSim end2end (balanced) | 0.03 | – | – | – | – | 1.00 |")
    assert len(lines) == 6


def test_separation_with_two_sizes_names_each_size_and_its_parameter_count():
    df = _csv("""
scorer,regime,train_data,size,parameters,seeds,negatives-heldout auc
F4,frozen,model_b,small,58433,3,0.158 ± 0.027
F4,end2end,model_b,small,58433,3,0.221 ± 0.042
F4,frozen,model_b,paper,940065,3,0.300 ± 0.010
F1,frozen,model_b,small,0,3,0.021 ± 0.000
""")
    lines = T.separation(df).splitlines()
    assert lines[2].startswith("| F1 MaxSim frozen (model_b; 3 seeds) | 0.02 |")  # one size: none named
    small = "| F4 Transformer frozen / end2end (model_b, small: 58,433 parameters; 3 seeds) |"
    assert lines[3].startswith(small + " 0.16 ± 0.03 / 0.22 ± 0.04 |")
    assert lines[4].startswith("| F4 Transformer frozen (model_b, paper: 940,065 parameters; 3 seeds) | 0.30 ± 0.01 |")


def test_separation_shows_each_noise_level_once_after_frozen_maxsim():
    df = _csv("""
scorer,regime,train_data,size,negatives-heldout auc
F1,frozen,model_b,small,0.08
F1,frozen,balanced,small,0.08
F3,frozen,balanced,small,0.20
F1-frozen+noise2x,,model_b,small,0.34
F1-frozen+noise1x,,model_b,small,0.23
F1-frozen+noise2x,,balanced,small,0.34
F1-frozen+noise1x,,balanced,small,0.23
""")
    lines = T.separation(df).splitlines()[2:]
    assert [line.split(" | ")[0] for line in lines] == [
        "| F1 MaxSim frozen (model_b)",
        "| F1 MaxSim frozen + 1x noise (control)",
        "| F1 MaxSim frozen + 2x noise (control)",
        "| F3 CNN frozen (balanced)",
    ]
    assert lines[1].split(" | ")[1] == "0.23"


def test_variants_bold_the_multi_seed_points_not_the_reference_or_the_control():
    df = _csv("""
backbone,variant,metric,structural_share,retrieval_rows,mean,std,n_seeds,mean_delta,ci_low,ci_high,p_holm,auc_gain
m,A,ndcg@10,0,3200,0.5906,0.009,3,,,,,0.0
m,B,ndcg@10,0.19,2592,0.5733,0.0152,3,-0.01732,-0.035,-0.00251,0.1694,0.39
m,C-identity,ndcg@10,0.19,2592,0.5814,0.0116,3,-0.0092,-0.023,0.0031,0.7069,-0.01
m,B-all,ndcg@10,0.19,2592,0.5989,,1,-0.0016,-0.021,0.017,1.0,0.29
""")
    rows = T.variants(df).splitlines()[2:]
    assert rows[0] == "| A | 0 | 3,200 | 3 | 0.591 ± 0.009 | – | – | – |"
    assert rows[1] == "| **B** | 0.19 | 2,592 | 3 | 0.573 ± 0.015 | −0.017 [−0.035, −0.003] | 0.17 | +0.39 |"
    assert rows[2].startswith("| C-identity (control) |") and rows[3].startswith("| B-all (all families) |")


@pytest.mark.slow
def test_report_tables_render_as_readme_tables(tmp_path):
    """The CSVs a run's report writes have the columns the README tables read (same code path as a run)."""
    from compsense.retrieval.harness import table1

    variants, seeds, metrics = (("base", 0.62), ("A", 0.59), ("B", 0.57)), (42, 43), ("ndcg@10", "acc@1")
    rows = [(v, s, m, x + (s - 42) / 100) for v, x in variants for s in seeds for m in metrics]
    results = pd.DataFrame(rows, columns=["variant", "seed", "metric", "value"])
    results = results.assign(backbone="minilm-l6", dataset="scifact", regime="zero-shot")
    table1(results).to_csv(tmp_path / "table1.csv", index=False)
    out = T.render("table1", tmp_path).splitlines()
    assert out[2].startswith("| MiniLM-L6 | nDCG@10 | 0.625 ± 0.007 | 0.595 ± 0.007 | 0.575 ± 0.007 | −0.020 (−3.4%) |")
    assert out[2].endswith("| – | 0.439 | 0.401 | −0.038 (−8.7%) |")  # equal drops at both seeds: no seed test
    results.loc[(results.variant == "B") & (results.seed == 43), "value"] -= 0.01
    table1(results).to_csv(tmp_path / "table1.csv", index=False)
    cell = T.render("table1", tmp_path).splitlines()[2].split(" | ")[7]
    assert cell.startswith("[") and cell.endswith("; 0.50 (≥ 0.50)")  # two seeds: the sign-flip floor is 0.5


def test_a_missing_table_or_an_open_marker_names_the_file_and_the_fix(tmp_path):
    with pytest.raises(T.TableError, match=r"separation.csv: missing.*make figures"):
        T.render("separation", tmp_path)
    with pytest.raises(T.TableError, match=r"README.md, line 3: .*closing"):
        T.update("# r\n\n<!-- table:table1 from x -->\n| stale |\n", tmp_path)
    with pytest.raises(T.TableError, match=r"line 2: a value is read from .*table1.csv, which is missing. Fix: `make"):
        T.update("\n<!-- value:table1.csv drop 3 --><!-- /value -->", tmp_path)
    text = "prose that mentions `<!-- table:... -->` markers is left alone\n"
    assert T.update(text, tmp_path) == text


def test_purity_table_is_the_paper_families_per_corpus_and_split(tmp_path):
    rows = [
        ("binding", "mrpc", "train", 231, 226),
        ("binding", "coco", "test", 172, 167),
        ("negation", "mrpc", "train", 876, 876),
        ("numeric", "mrpc", "train", 100, 99),  # not a paper family: not in the README table
    ]
    df = pd.DataFrame(rows, columns=["family", "source", "split", "pairs", "pure"])
    df.assign(purity=df.pure / df.pairs, judged_as="", failing_examples="").to_csv(tmp_path / "purity.csv", index=False)
    lines = T.render("purity", tmp_path).splitlines()
    assert lines[0] == "| family | MRPC train | COCO captions held out |"
    assert lines[2] == "| negation | 876 / 876 (100.0%) | – |"
    assert lines[3] == "| binding | 226 / 231 (97.8%) | 167 / 172 (97.1%) |" and len(lines) == 4


def test_geometry_table_is_auc_and_pairwise_accuracy_with_its_interval_per_family(tmp_path):
    cells = {"auc": 0.2, "pairwise_accuracy": 0.1, "pairwise_accuracy_ci_low": 0.05, "pairwise_accuracy_ci_high": 0.15}
    rows = []
    for variant, shift in (("base", 0.0), ("A", 0.01), ("B", 0.5)):
        for family in ("negation", "binding", "spatial", "all", "numeric"):
            rows += [(variant, "negatives", family, metric, mean + shift) for metric, mean in cells.items()]
        rows.append((variant, "sugarcrepe", "swap_att", "auc", 0.1))
    df = pd.DataFrame(rows, columns=["variant", "dataset", "family", "metric", "mean"]).assign(backbone="m", count=1)
    df.to_csv(tmp_path / "all_geometry.csv", index=False)
    lines = T.render("geometry", tmp_path).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == [
        "| negation (trained)",
        "| binding (trained)",
        "| spatial (trained)",
        "| the three pooled",
        "| numeric",
        "| SugarCrepe swap_att",
    ]
    assert lines[2] == (
        "| negation (trained) | 0.20 | 0.21 | 0.70 | 0.10 [0.05, 0.15] | 0.11 [0.06, 0.16] | 0.60 [0.55, 0.65] |"
    )
    assert lines[-1].endswith("| 0.10 | 0.10 | 0.10 | – | – | – |")


def test_the_rerank_table_names_the_noise_control_apart_from_f1():
    df = _csv("""
variant,verifier_variant,verifier,regime,k,weight,ndcg@10,mean_delta,ci_low,ci_high,p_holm
base,,none,encoder-only,,,0.731,,,,
F1-frozen@model_b-small,model_b-small,F1,frozen,100,0.0,0.782,0.051,0.013,0.090,0.39
F1-frozen+noise2x@model_b-small,model_b-small,F1,frozen,100,0.0,0.244,-0.488,-0.544,-0.432,0.001
""")
    lines = T.rerank(df).splitlines()
    assert lines[2].startswith("| Base | encoder only | 0.731 | – | – |")
    assert lines[3] == "| F1 MaxSim | frozen | 0.782 | +0.051 [+0.013, +0.090] | 0.39 |"
    assert lines[4].startswith("| F1 MaxSim + 2x noise (control) | frozen | 0.244")


def test_a_value_quoted_in_prose_is_rewritten_from_one_cell_and_a_bad_marker_names_the_fix(tmp_path):
    pd.DataFrame({"metric": ["acc@1", "ndcg@10"], "drop": [-0.0158, -0.00935], "t_p": [0.068, 0.0325]}).to_csv(
        tmp_path / "table1.csv", index=False
    )
    text = (
        "B − A = <!-- value:table1.csv metric=ndcg@10 drop +3 -->+0.500<!-- /value --> "
        "(p <!-- value:table1.csv metric=ndcg@10 t_p p -->0.9<!-- /value -->), "
        "Acc@1 <!-- value:table1.csv metric=acc@1 drop 2 --><!-- /value -->.\n"
    )
    assert T.update(text, tmp_path) == (
        "B − A = <!-- value:table1.csv metric=ndcg@10 drop +3 -->−0.009<!-- /value --> "
        "(p <!-- value:table1.csv metric=ndcg@10 t_p p -->0.033<!-- /value -->), "
        "Acc@1 <!-- value:table1.csv metric=acc@1 drop 2 -->−0.02<!-- /value -->.\n"
    )
    assert T.update(T.update(text, tmp_path), tmp_path) == T.update(text, tmp_path)  # stable
    with pytest.raises(T.TableError, match=r"line 2: `` selects 2 rows of .*table1.csv, not one"):
        T.update("\nnDCG <!-- value:table1.csv drop 3 -->x<!-- /value -->", tmp_path)
    assert T.update("<!-- value:table1.csv drop m+2 --><!-- /value -->", tmp_path).endswith("−0.01<!-- /value -->")
    row = {"stage": "02", "notebook": "02.ipynb", "command": "make", "run": "r", "commit": "0123e45", "minutes": 1}
    pd.DataFrame([row]).to_csv(tmp_path / "provenance.csv", index=False)
    # a commit of digits stays text (not 1.23e+47), in a value and in a table (storage.read_csv)
    assert "-->0123e45<!--" in T.update("<!-- value:provenance.csv stage=02 commit s --><!-- /value -->", tmp_path)
    assert T.render("provenance", tmp_path).endswith("| 02 `02.ipynb` | `make` | `r` | `0123e45` | 1 min |")
    with pytest.raises(T.TableError, match=r"selects 0 rows"):
        T.update("<!-- value:table1.csv metric=mrr@10 drop m2 --><!-- /value -->", tmp_path)
    # the line is the document's own, though a table above the value is rewritten to another length
    (tmp_path / "table1.csv").unlink()
    pd.read_csv(TABLES / "table1.csv").to_csv(tmp_path / "table1.csv", index=False)
    doc = (
        "<!-- table:table1 from x -->\n| stale |\n<!-- /table -->\n\n<!-- value:table1.csv dorp 3 --><!-- /value -->\n"
    )
    with pytest.raises(T.TableError, match=r"README.md, line 5: .*has no column 'dorp'"):
        T.update(doc, tmp_path)
    with pytest.raises(T.TableError, match=r"has no column 'dorp'"):
        T.update("<!-- value:table1.csv metric=ndcg@10 dorp 3 -->x<!-- /value -->", tmp_path)
    with pytest.raises(T.TableError, match=r"line 1: a `<!-- value:.*does not parse"):
        T.update("<!-- value:table1.csv metric=ndcg@10 drop 3 -->x", tmp_path)


def _budget_runs(rows: list[tuple]) -> pd.DataFrame:
    columns = [
        "scorer",
        "regime",
        "train_data",
        "size",
        "recipe",
        "budget",
        "seed",
        "auc",
        "self_match",
        "noise_excess",
    ]
    return pd.DataFrame(rows, columns=columns)


def test_the_budget_table_reads_each_point_against_the_noise_line_with_its_seed_interval():
    from compsense.verifiers.budget import budget_table

    runs = _budget_runs(
        [
            ("F1", "frozen", "model_b", "small", "equal", 0, 42, 0.08, 1.0, float("nan")),
            ("F1-frozen+noise2x", "", "model_b", "small", "equal", 0, 42, 0.34, 0.73, 0.0),
            ("F4", "frozen", "model_b", "paper", "equal", 2048, 42, 0.24, 0.94, 0.09),
            ("F4", "frozen", "model_b", "paper", "equal", 48000, 42, 0.30, 0.9, 0.1),
            ("F4", "frozen", "model_b", "paper", "equal", 48000, 43, 0.36, 0.85, 0.12),
            ("F4", "frozen", "model_b", "paper", "equal", 48000, 44, 0.42, 0.8, 0.14),
            ("F4", "frozen", "model_b", "paper", "authors", 48000, 42, 0.5, 0.6, 0.05),
        ]
    )
    lines = T.budget(budget_table(runs.drop(columns="train_data"))).splitlines()
    assert lines[0].startswith("| scorer | triplets | near-miss AUC |")
    # the noise line first (budget 0, in increasing noise), then each trained point by budget
    assert lines[2].startswith("| F1 MaxSim frozen | 0 | 0.08 |")
    assert lines[3].startswith("| F1 MaxSim frozen + 2x noise (control) | 0 | 0.34 |")
    assert lines[3].endswith("| – | 1 |")  # the line's distance to itself is not shown
    assert lines[4].startswith("| F4 Transformer frozen (paper size) | 2,048 | 0.24 | – | 0.94 |")
    # three seeds: the mean with its seed-level t interval; the excess with its sign
    assert "| 48,000 | 0.36 [0.21, 0.51] |" in lines[5] and "| +0.120 [+0.070, +0.170] |" in lines[5]
    assert lines[5].endswith("| 3 |")
    assert lines[6].startswith("| F4 Transformer frozen (paper size, the authors' whole recipe) | 48,000 | 0.50 |")


def test_the_budget_table_keeps_each_rows_kind_apart_and_the_noise_line_once():
    from compsense.verifiers.budget import budget_table

    line = [("F1", "frozen", rows, "small", "equal", 0, 42, 0.08, 0.9, 0.01) for rows in ("model_b", "balanced")]
    runs = _budget_runs(
        line
        + [
            ("F3", "frozen", rows, "small", "equal", 8192, seed, auc, 0.9, 0.01)
            for rows, aucs in (("model_b", (0.20, 0.22, 0.24)), ("balanced", (0.40, 0.42, 0.44)))
            for seed, auc in zip((42, 43, 44), aucs)
        ]
    )
    lines = T.budget(budget_table(runs)).splitlines()[2:]
    assert len(lines) == 3  # the untrained MaxSim once, then each rows kind's point
    assert lines[0].startswith("| F1 MaxSim frozen | 0 | 0.08 |")
    assert lines[1].startswith("| F3 CNN frozen (small size) | 8,192 | 0.22 [")
    assert lines[2].startswith("| F3 CNN frozen (`balanced` rows, small size) | 8,192 | 0.42 [")
    # a table written before the column was one reads as the authors' rows
    old = budget_table(runs[runs.train_data == "model_b"].drop(columns="train_data"))
    assert T.budget(old).splitlines()[3].startswith("| F3 CNN frozen (small size) | 8,192 | 0.22 [")
