"""Data files shipped with reconrisk (see :mod:`reconrisk._src.data` for provenance)."""
