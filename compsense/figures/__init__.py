"""Figures of particular notebooks (problem, geometry, ab) and saving them (export). Reads what the
science layers wrote.
"""
