"""reconrisk's implementation: the rooms and the core modules, private (their paths may change).

What users import is the face, :mod:`reconrisk` (at most 40 names), plus :mod:`reconrisk.errors` and
:mod:`reconrisk.integrations`; an old path ``reconrisk.<module>`` still reaches ``reconrisk._src.<module>`` (the
same module, with a ``DeprecationWarning``: :mod:`reconrisk._src._aliases`). Importing this package imports
nothing (``import reconrisk`` stays numpy-free).
"""

__version__ = "0.1.0"
