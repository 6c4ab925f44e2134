"""Data: dataset loaders (datasets), the structural near-miss rules (negatives) and where the
structural data comes from and goes (structural). Builds on core.
"""
