"""Who is at risk, in a user's Opacus loop: per-sample gradient norms and a per-example budget.

* :class:`PerSampleNorms` records the per-sample gradient norms Opacus computes anyway (the norms its
  ``DPOptimizer.clip_and_accumulate`` clips by, recomputed from ``p.grad_sample`` with the same formula,
  since Opacus does not keep them) for the examples of each Poisson batch, and gives the (n, T) array of
  :func:`reconrisk._src.individual.privacy.individual_analysis` — NaN at the steps an example was not sampled,
  which the analysis charges at C (its gradient was never computed there) — and the ex-post analysis itself
  (estimates, not DP guarantees: Feldman & Zrnic 2021; Yu et al. 2023).
* :class:`IndividualFilterHook` trains with a per-example budget: an
  :class:`~reconrisk._src.individual.filter.IndividualFilter` fixed before training admits or stops each
  example at every step (Feldman & Zrnic 2021, Thm 3.1, per individual), and the stopped examples'
  per-sample gradients are zeroed before Opacus clips and sums them; every example is then certified at the
  target.

**Which example is which.** Opacus's ``DPDataLoader`` draws each batch's dataset indices from its batch
sampler (``UniformWithReplacementSampler``, Poisson) in the main process, whatever the number of workers,
and the batches reach the loop in that order. ``attach`` wraps the loader's batch sampler so that every
batch of indices it yields is appended to a queue (a new epoch's iteration clears what an interrupted one
left), and each ``clip_and_accumulate`` call takes as many indices from the queue as it has per-sample
gradients (``BatchMemoryManager``'s physical batches are consecutive slices of the logical batch, so
counting works there too). A logical step ends where Opacus adds noise (``add_noise``, once per logical
step). Not supported: ``rand_on_empty`` loaders (their dummy row has no index), ghost clipping and
per-layer clipping (no flat per-sample norms), several processes.

**Why the filter charges what it charges.** The filter's charge at step t must be fixed by the history,
not by step t's own sampling coin (a charge that depended on whether the example was sampled would let
the filter's later decisions reveal the coin, undoing the amplification by subsampling). Opacus computes
the gradients of the sampled examples only, so the hook charges every example its own norm only when it
knows every example's norm at θ_t: at q = 1 (every example is in every batch), or through ``norms_fn``
(a callable returning every example's norm at the current parameters, e.g. :func:`full_norms`: one extra
pass over the data per step). Otherwise every example is charged at C (sound; the filter then acts as a
per-example step budget at the worst case). "q = 1" is the sampler's rate (the loader's ``sample_rate``,
fixed before training), never the draw: at q < 1 a step whose Poisson draw happens to hold every example
is the sampling coin itself, and charging own norms there (a smaller charge exactly when everyone was
drawn) would make the filter's books a function of the coin.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from typing import Callable

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..individual.privacy import individual_analysis
from ..release import Release
from ..adapters.opacus_history import extend_history


class _RecordingSampler:
    """Wraps a batch sampler: every batch of indices it yields goes into ``queue`` too."""

    def __init__(self, sampler, queue: deque):
        self._sampler = sampler
        self._queue = queue

    def __iter__(self):
        self._queue.clear()  # what an interrupted epoch prefetched is never consumed
        for batch in self._sampler:
            self._queue.extend(int(i) for i in batch)
            yield batch

    def __len__(self):
        return len(self._sampler)

    def __getattr__(self, name):
        return getattr(self._sampler, name)


def _per_sample_norms(grad_samples):
    """Per-sample gradient norms exactly as Opacus's ``clip_and_accumulate`` computes them (flat clipping)."""
    import torch

    per_param = [g.reshape(len(g), -1).norm(2, dim=-1) for g in grad_samples]
    dev = per_param[0].device
    return torch.stack([n.to(dev) for n in per_param], dim=1).norm(2, dim=1)


class PerSampleNorms:
    """Record the per-sample gradient norms of an Opacus run and analyse each example's privacy ex post.

    Usage (``optimizer``, ``loader``: what ``PrivacyEngine.make_private`` returned)::

        norms = PerSampleNorms().attach(optimizer, loader)
        ...  # the user's training loop, unchanged
        who = norms.analysis()  # reconrisk._src.individual.privacy.IndividualPrivacy (ex post)
        who.rero(kappa=0.1), who.most_exposed(10, kappa=0.1)

    ``norms`` is (n, T) with NaN where an example was not sampled; ``release`` the run as Opacus's
    accountant records it (σ, q per step, C).
    """

    def __init__(self) -> None:
        self._optimizer = self._loader = None
        self._queue: deque = deque()
        self._rows: list = []  # per finished logical step: (indices, norms)
        self._cur_idx: list = []
        self._cur_norms: list = []
        self._calls = 0
        self.history: list = []  # [(sigma, q, steps)]
        self.clip_norm: float | None = None
        self.sample_rate: float | None = None
        self.dataset_size: int | None = None

    # -- the hook -------------------------------------------------------------------------------
    def attach(self, optimizer, data_loader, *, sample_rate: float | None = None) -> "PerSampleNorms":
        """Hook into a ``DPOptimizer`` (flat clipping, one process) and the ``DPDataLoader`` that feeds it.

        ``sample_rate``: the Poisson rate; default ``data_loader.sample_rate`` (a ``DPDataLoader`` has it).
        """
        if self._optimizer is not None or self.history:
            raise ReconRiskError("this recorder is already attached or used; make a new one per training run")
        for attr in ("clip_and_accumulate", "add_noise", "params", "noise_multiplier", "max_grad_norm"):
            if not hasattr(optimizer, attr):
                raise ReconRiskError(f"optimizer must be an Opacus DPOptimizer (from make_private); found "
                                     f"{type(optimizer).__name__} without {attr!r}")
        if isinstance(optimizer.max_grad_norm, (list, tuple)):
            raise ReconRiskError("per-sample norms need flat clipping (one max_grad_norm); found per-layer clipping")
        if getattr(optimizer, "world_size", 1) != 1:
            raise ReconRiskError("per-sample norms are recorded in one process; found "
                                 f"world_size={optimizer.world_size}")
        if "FastGradientClipping" in type(optimizer).__name__:
            raise ReconRiskError("ghost clipping keeps no per-sample gradients; use grad_sample_mode='hooks'")
        sampler = getattr(data_loader, "batch_sampler", None)
        if sampler is None:
            raise ReconRiskError("data_loader must have a batch sampler (the DPDataLoader from make_private)")
        rate = sample_rate if sample_rate is not None else getattr(data_loader, "sample_rate", None)
        if rate is None:
            raise ReconRiskError("give sample_rate: the data loader has no sample_rate (not a DPDataLoader)")
        self.sample_rate = v.sample_rate("sample_rate", rate)
        self.dataset_size = len(data_loader.dataset)
        self.clip_norm = float(optimizer.max_grad_norm)
        # DataLoader forbids assigning batch_sampler after construction; the wrapper only observes it
        object.__setattr__(data_loader, "batch_sampler", _RecordingSampler(sampler, self._queue))
        self._loader, self._sampler = data_loader, sampler
        self._optimizer = optimizer
        # the methods as they are now (another hook, e.g. the one-run audit's add_noise, keeps working)
        self._own = {name: vars(optimizer).get(name) for name in ("clip_and_accumulate", "add_noise")}
        self._orig_clip, self._orig_noise = optimizer.clip_and_accumulate, optimizer.add_noise
        optimizer.clip_and_accumulate = self._clip_and_accumulate
        optimizer.add_noise = self._add_noise
        return self

    def detach(self) -> None:
        """Give the optimizer its methods and the loader its batch sampler back (as they were at ``attach``)."""
        if self._optimizer is not None:
            for name, fn in self._own.items():
                if fn is None:
                    vars(self._optimizer).pop(name, None)
                else:
                    setattr(self._optimizer, name, fn)
            object.__setattr__(self._loader, "batch_sampler", self._sampler)
            self._optimizer = None

    def _take_indices(self, count: int) -> np.ndarray:
        if count > len(self._queue):
            raise ReconRiskError(f"a batch of {count} per-sample gradients but only {len(self._queue)} sampled indices "
                                 "are pending: train from the loader passed to attach (not a rand_on_empty loader)")
        return np.array([self._queue.popleft() for _ in range(count)], dtype=np.int64)

    def _observe(self):
        """(indices, norms) of the physical batch about to be clipped."""
        opt = self._optimizer
        gs = opt.grad_samples
        count = len(gs[0]) if gs else 0
        idx = self._take_indices(count)
        norms = _per_sample_norms(gs).double().cpu().numpy() if count else np.zeros(0)
        return idx, norms

    def _clip_and_accumulate(self) -> None:
        idx, norms = self._observe()
        self._cur_idx.append(idx)
        self._cur_norms.append(norms)
        self._calls += 1
        self._orig_clip()

    def _add_noise(self) -> None:
        opt = self._optimizer
        self._orig_noise()
        q = min(1.0, self.sample_rate * getattr(opt, "accumulated_iterations", 1))  # as Opacus's accountants count it
        self._end_step(float(opt.noise_multiplier), q)

    def _end_step(self, sigma: float, q: float) -> None:
        idx = np.concatenate(self._cur_idx) if self._cur_idx else np.zeros(0, np.int64)
        nrm = np.concatenate(self._cur_norms) if self._cur_norms else np.zeros(0)
        self._rows.append((idx, nrm))
        self._cur_idx, self._cur_norms, self._calls = [], [], 0
        extend_history(self.history, sigma, q)

    # -- what it recorded -----------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return len(self._rows)

    @property
    def release(self) -> Release:
        """The run (σ, q per logical step, C) as Opacus's accountant records it."""
        if not self.history:
            raise ReconRiskError("no optimizer step was taken with the recorder attached; train first")
        return Release.schedule(self.history, clip_norm=self.clip_norm)

    @property
    def norms(self) -> np.ndarray:
        """(n, T) per-sample gradient norms, clipped at C; NaN where the example was not sampled."""
        if not self._rows:
            raise ReconRiskError("no optimizer step was taken with the recorder attached; train first")
        out = np.full((self.dataset_size, len(self._rows)), np.nan)
        for t, (idx, nrm) in enumerate(self._rows):
            out[idx, t] = np.minimum(nrm, self.clip_norm)  # an index drawn twice (never, with Poisson) keeps the last
        return out

    def analysis(self, *, buckets=None):
        """Ex-post per-example privacy (:func:`reconrisk._src.individual.privacy.individual_analysis`): estimates."""

        kw = {} if buckets is None else {"buckets": buckets}
        return individual_analysis(self.release, self.norms, **kw)


class IndividualFilterHook(PerSampleNorms):
    """Train with a per-example budget in an Opacus loop: an ``IndividualFilter`` admits or stops each example.

    Usage::

        f = IndividualFilter(Release(sigma, q, steps, clip_norm), target_rero=0.3, kappa=0.1)
        hook = IndividualFilterHook(f).attach(optimizer, loader)
        ...  # the user's loop, one physical batch per optimizer step
        f.certified_rero(0.1)  # every example ≤ 0.3, certified; f.filtered: who was stopped

    ``norms_fn``: a callable returning every example's gradient norm (n,) at the current parameters
    (e.g. :func:`full_norms`); with it (or at q = 1) each example is charged at its own norm, otherwise at
    C (module docstring: the charge may not depend on the sampling). The recorded ``norms`` are the sampled
    examples' (NaN elsewhere), as for :class:`PerSampleNorms`.
    """

    def __init__(self, individual_filter, *, norms_fn: Callable[[], np.ndarray] | None = None) -> None:
        super().__init__()
        for attr in ("admit", "release", "certified_rero"):
            if not hasattr(individual_filter, attr):
                raise ReconRiskError(f"individual_filter must be a reconrisk IndividualFilter; found "
                                     f"{type(individual_filter).__name__}")
        if norms_fn is not None and not callable(norms_fn):
            raise ReconRiskError(f"norms_fn must be callable (returning every example's norm); found {norms_fn!r:.40}")
        self.filter = individual_filter
        self.norms_fn = norms_fn
        self.charged_own = 0  # steps at which every example was charged at its own norm

    def attach(self, optimizer, data_loader, *, sample_rate: float | None = None) -> "IndividualFilterHook":
        super().attach(optimizer, data_loader, sample_rate=sample_rate)
        rel = self.filter.release
        if not math.isclose(rel.clip_norm, self.clip_norm, rel_tol=1e-9) or not math.isclose(
                rel.noise_multiplier, float(optimizer.noise_multiplier), rel_tol=1e-6) or not math.isclose(
                rel.sample_rate, self.sample_rate, rel_tol=1e-9):
            self.detach()
            raise ReconRiskError(f"the filter's release (σ={rel.noise_multiplier:g}, q={rel.sample_rate:g}, "
                                 f"C={rel.clip_norm:g}) must be the run's (σ={float(optimizer.noise_multiplier):g}, "
                                 f"q={self.sample_rate:g}, C={self.clip_norm:g})")
        return self

    def _clip_and_accumulate(self) -> None:
        import torch

        if self._calls:
            raise ReconRiskError("the filter hook needs one physical batch per optimizer step (no BatchMemoryManager "
                                 "or gradient accumulation): it must admit every example once per step")
        opt = self._optimizer
        idx, norms = self._observe()
        n = self.dataset_size
        charge = np.full(n, np.nan)  # NaN: charged at C
        if self.norms_fn is not None:
            charge = np.asarray(self.norms_fn(), dtype=float).reshape(-1)
            if charge.shape != (n,):
                raise ReconRiskError(f"norms_fn must return the {n} examples' norms; found shape {charge.shape}")
            self.charged_own += 1
        elif self.sample_rate == 1.0:  # the sampler's rate, not the draw: at q = 1 there is no sampling coin
            charge[idx] = norms  # every example is in the batch (a missing one stays at C: sound)
            self.charged_own += 1
        scale = self.filter.admit(charge)
        w = scale[idx]
        if idx.size and np.any(w != 1.0):
            for p in opt.params:
                gs = opt._get_flat_grad_sample(p)
                wt = torch.as_tensor(w, dtype=gs.dtype, device=gs.device)
                p.grad_sample = gs * wt.view(-1, *[1] * (gs.dim() - 1))
        self._cur_idx.append(idx)
        self._cur_norms.append(norms)
        self._calls += 1
        self._orig_clip()


def full_norms(model, dataset, loss_fn, *, batch_size: int = 256) -> Callable[[], np.ndarray]:
    """A ``norms_fn`` for :class:`IndividualFilterHook`: every example's gradient norm at the current parameters.

    ``model``: the module Opacus wraps (``GradSampleModule``) or the plain one; ``loss_fn(logits, y)`` the
    per-batch mean loss, as trained (``torch.nn.functional.cross_entropy``); ``dataset`` yields (x, y). Uses
    ``torch.func`` (vmap of grad over examples), one pass over the data per call.
    """

    import torch
    from torch.func import functional_call, grad, vmap

    live = getattr(model, "_module", model)
    batch_size = v.integer("batch_size", batch_size, minimum=1)
    # a hook-free copy of the architecture (Opacus's capture hooks are autograd Functions torch.func refuses);
    # every call evaluates it at the live model's current parameters
    clone = copy.deepcopy(live)
    for m in clone.modules():
        for hooks in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"):
            getattr(m, hooks).clear()

    def one(params, x, y):
        out = functional_call(clone, params, (x.unsqueeze(0),))
        return loss_fn(out, y.unsqueeze(0))

    def norms() -> np.ndarray:
        params = {k: p.detach() for k, p in live.named_parameters() if p.requires_grad}
        out = []
        for xb, yb in torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False):
            g = vmap(grad(one), in_dims=(None, 0, 0))(params, xb, yb)
            sq = sum(t.reshape(len(xb), -1).pow(2).sum(1) for t in g.values())
            out.append(sq.sqrt().double().cpu().numpy())
        return np.concatenate(out)

    return norms
