"""Adapters: other libraries' descriptions of a run, read into reconrisk's terms.

* (``dp_accounting`` events are read by :mod:`reconrisk._src.mechanisms.traverse`, each event class by the mechanism or
  sampler class that owns it.)
* :mod:`.opacus_history` — an Opacus accountant's history and its data loader's sampler, read into
  segments (Poisson, or the sound stand-in of shuffled or sequential batches);
  :meth:`Release.from_opacus <reconrisk._src.release.Release.from_opacus>` calls it.
* :mod:`.opacus_loaders` — what a non-Poisson PyTorch loader can do with one example
  (``LoaderPlan``: its passes, K = Σ over steps of its copies², at the worst example and sequence).

Layer 0, with the core: the adapters import only errors, validation and their library (lazily), never
``Release`` (which calls them) and never a framework. The trainers' integrations (Opacus, Flower), which
run inside a user's training, live in :mod:`reconrisk.integrations`.
"""
