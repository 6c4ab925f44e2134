"""Figures of particular notebooks (problem: 00, negatives: 01, ab: 02, geometry: 03) and saving them
(export), and each notebook's last words (endings: its result in sentences, from its own tables).
Reads what the science layers wrote.
"""
