"""Names the verifier code, the pipeline, the figures and the command line share, in a module that imports
nothing: the publisher, the figures and `compsense crossencoder`'s parser read them without loading the
code behind them (`verifiers.data`, torch, sentence-transformers).

    TRAIN_DATA          the training-row sets notebook 04 can build (`verifiers.data.training_rows`)
    DEFAULT_TRAIN_DATA  the authors' rows; a result row without a `train_data` column was trained on them
    with_train_data     a table with that column filled so (rows published before the column)
    JOINT_LOSSES        the cross-encoder's training objectives (`verifiers.joint.joint_loss` says why each)
    DEFAULT_JOINT_LOSS  the one it trains with unless told
    JOINT_PRECISIONS    fp32, or bf16 autocast (`verifiers.joint.precision_context`)
    JOINT_RESULTS, JOINT_RUNS, JOINT_RERANK_FILES, JOINT_OUT
                        `compsense crossencoder`'s tables (results/<name>.parquet) and its default folder
    JOINT_MAPS          its table of the map verifiers `--maps` trains on the same rows, budgets and seeds
"""

TRAIN_DATA = ("identity", "paraphrase", "mixed", "model_b", "balanced", "balanced_all", "balanced_pairs")
DEFAULT_TRAIN_DATA = "model_b"  # the authors' rows: what every point published before the column trained on


def with_train_data(table):
    """`table` (a pandas DataFrame, duck-typed: this module imports nothing) with its `train_data` column,
    DEFAULT_TRAIN_DATA where the column is blank or missing: rows published before tables named their
    training rows were trained on the authors' rows."""
    column = table["train_data"].fillna(DEFAULT_TRAIN_DATA) if "train_data" in table else DEFAULT_TRAIN_DATA
    return table.assign(train_data=column)


JOINT_LOSSES = ("cmnrl", "mnrl", "bce")
DEFAULT_JOINT_LOSS = "cmnrl"  # the verifiers' in-batch contrast, in memory-bounded mini-batches
JOINT_PRECISIONS = ("fp32", "bf16")
JOINT_RESULTS, JOINT_RUNS = "crossencoder", "crossencoder_runs"  # the near-miss rows; one row per trained model
JOINT_RERANK_FILES = ("crossencoder_rerank", "crossencoder_rerank_per_query", "crossencoder_rerank_cost")
JOINT_MAPS = "crossencoder_maps"  # the map verifiers beside it: paired with its models seed by seed
JOINT_OUT = "runs/crossencoder"
