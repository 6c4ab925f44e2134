"""Figures of particular notebooks (problem: 00, negatives: 01, ab: 02, geometry: 03) and saving them
(export). Reads what the science layers wrote.
"""
