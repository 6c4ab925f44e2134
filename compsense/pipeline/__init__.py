"""Operations: profiles, the stages and their runner, the report, time estimates, the GPU bundle and
doctor. The top layer: nothing below imports it.
"""
