"""The analyses: one contract (:mod:`.base`), its three implementations and the dispatch (:func:`analyse`)."""

from .dispatch import analyse

__all__ = ["analyse"]
