"""Data files shipped with reconrisk (see :mod:`reconrisk.data` for provenance)."""
