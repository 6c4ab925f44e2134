"""The pipeline: profiles, the stages and their papermill runner, the declared pieces, and the tables a
run publishes (report, publish, provenance). Nothing below imports it; the command line and doctor
(compsense.doctor: what a profile needs) sit above it.
"""
