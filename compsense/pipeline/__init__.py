"""The pipeline: profiles, the stages and their papermill runner, the declared pieces, doctor (what a
profile needs), and the tables a run publishes (report, publish, provenance). The top layer: nothing
below imports it.
"""
