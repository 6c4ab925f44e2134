"""Foundation: where things live (paths), atomic files and tidy tables (storage), seeding, the encoder
registry (encoders) and the statistics of a difference (stats). Imports nothing else of compsense.
"""
