"""The names of what a verifier trains on, in a module that imports nothing: the pipeline's publisher,
the figures and the command line read them without loading the data code (`verifiers.data`) behind them.

    TRAIN_DATA          the training-row sets notebook 04 can build (`verifiers.data.training_rows`)
    DEFAULT_TRAIN_DATA  the authors' rows; a result row without a `train_data` column was trained on them
"""

TRAIN_DATA = ("identity", "paraphrase", "mixed", "model_b", "balanced", "balanced_all")
DEFAULT_TRAIN_DATA = "model_b"  # the authors' rows: what every point published before the column trained on
