"""Verifiers over the token-token cosine map: the map (simmap), F0-F4 (architectures), their training
data, recipe and training, the study grid, reranking and a CrossEncoder-shaped wrapper.
"""
