"""Retrieval: training Model A/B (training), the one evaluation harness (harness), zero-shot vs in-
domain (regime), the evaluate command and model cards. Builds on core and data.
"""
