"""The similarity-map explorer: what it shows (core) and its ipywidgets shell (widgets)."""
