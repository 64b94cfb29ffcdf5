"""Adapters: other libraries' descriptions of a run, read into reconrisk's terms.

* :mod:`.dp_events` — a ``dp_accounting`` ``DpEvent`` flattened once into its steps
  (``dp_event_leaves``) and whether they make one DP-SGD release (``dp_event_release_refusal``);
  :meth:`Release.from_dp_event <reconrisk._src.release.Release.from_dp_event>` and the dispatch read it.
* :mod:`.opacus_history` — an Opacus accountant's history and its data loader's sampler, read into
  segments (Poisson, or the sound stand-in of shuffled or sequential batches);
  :meth:`Release.from_opacus <reconrisk._src.release.Release.from_opacus>` calls it.
* :mod:`.opacus_loaders` — what a non-Poisson PyTorch loader can do with one example
  (``LoaderPlan``: its passes, K = Σ over steps of its copies², at the worst example and sequence).

Layer 0, with the core: the adapters import only errors, validation and their library (lazily), never
``Release`` (which calls them) and never a framework. The trainers' integrations (Opacus, Flower), which
run inside a user's training, live in :mod:`reconrisk.integrations`.
"""
