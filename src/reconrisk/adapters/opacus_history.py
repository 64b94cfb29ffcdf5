"""The Opacus adapter of :class:`~reconrisk.release.Release`: reading an Opacus accountant's history.

Every Opacus accountant keeps ``history = [(noise_multiplier, sample_rate, num_steps), …]`` and assumes
Poisson sampling. :func:`release_from_history` turns a history into the release it accounts for — or, for a
shuffling or sequential data loader (:func:`loader_sampler`), into the sound stand-in
``Release.shuffled(σ, epochs)`` with a one-line note — and :func:`accountant_history` finds the history of a
``PrivacyEngine`` or an accountant. What users call is :meth:`Release.from_opacus
<reconrisk.release.Release.from_opacus>` (and :func:`reconrisk.integrations.opacus.release_from_opacus`).

Neither Opacus nor torch is imported (class names and attributes only), and neither is
:mod:`reconrisk.release`: the release class is passed in, so the core type can call this module.
"""

from __future__ import annotations

import math

from .. import _validate as v
from ..errors import ReconRiskError

__all__ = ["SHUFFLE_REFUSAL", "accountant_history", "extend_history", "loader_sampler", "release_from_history"]

#: One line for shuffled batches: said wherever a shuffling sampler is asked for.
SHUFFLE_REFUSAL = (
    "shuffled batches (a random permutation cut into batches each epoch) have no known tight privacy analysis "
    "(Chua et al. 2024 show Poisson numbers can understate it); certify the sound bound instead: "
    "Release.shuffled(noise_multiplier, epochs) (each example's batch revealed: one Gaussian step of "
    "replace-one sensitivity 2C per epoch)")


def accountant_history(privacy_engine_or_accountant, data_loader=None) -> tuple[list, str]:
    """(history, batch sampling) of an Opacus ``PrivacyEngine`` or accountant (the engine holds its accountant).

    The batch sampling is :func:`loader_sampler` of ``data_loader`` when given, else the accountant's own
    ``batch_sampling`` where it has one (:class:`~reconrisk.integrations.opacus.ReconRiskAccountant`), else
    ``"poisson"`` (what every Opacus accountant assumes).
    """
    obj = privacy_engine_or_accountant
    acct = getattr(obj, "accountant", obj)
    hist = getattr(acct, "history", None)
    if hist is None:
        raise ReconRiskError(
            "privacy_engine_or_accountant must be an Opacus PrivacyEngine or accountant (with .history); "
            f"found {type(obj).__name__}"
        )
    kind = loader_sampler(data_loader) if data_loader is not None else getattr(acct, "batch_sampling", "poisson")
    return hist, kind


def extend_history(history: list, noise_multiplier: float, sample_rate: float) -> None:
    """Append one step to an Opacus-style history ``[(σ, q, steps), …]`` (what :meth:`Release.schedule` reads):
    merged into the last entry when σ and q repeat, a new entry otherwise."""
    if history and history[-1][0] == noise_multiplier and history[-1][1] == sample_rate:
        history[-1] = (noise_multiplier, sample_rate, history[-1][2] + 1)
    else:
        history.append((noise_multiplier, sample_rate, 1))


def release_from_history(release_cls, history, batch_sampling: str = "poisson", *, clip_norm: float = 1.0):
    """The release an Opacus history ``[(σ, q, steps), …]`` accounts for, given how the batches were drawn.

    ``release_cls`` is :class:`reconrisk.release.Release` (its ``schedule`` and ``shuffled`` build the
    answer; this module never imports it). ``batch_sampling`` is :func:`loader_sampler`'s answer.
    ``"poisson"``: the history as it is (Opacus's accountants assume Poisson sampling). ``"shuffled"`` or ``"sequential"``: the history (Opacus records
    q = 1/len(loader) per step whatever the loader) does not describe the run; the sound stand-in
    :meth:`Release.shuffled` (σ, epochs = ⌈Σ T·q⌉: a started epoch counts whole) is returned with a one-line
    note saying so — the caller warns. Why the stand-in is sound for both, replace-one neighbours (the
    batch boundaries are fixed by the data set size, so adding an example is not the relation these loaders
    protect): *sequential* batches are fixed before training, each example in exactly one known batch per
    epoch; two neighbours differ in that batch only, by a clipped-gradient difference of norm ≤ 2C, and
    every other step is the same function of the outputs so far, so (adaptive composition) the run is
    ``epochs`` Gaussian mechanisms of sensitivity 2C — the stand-in exactly, no slack. *Shuffled* batches
    are the same given the permutation, and revealing the permutation can only help the adversary, so the
    stand-in is an upper bound there (no tight analysis of shuffling is known: Chua et al. 2024).

    Steps at q = 0 are dropped (they never touch the data); a step with σ = 0 and q > 0 is refused (no
    finite guarantee). Returns ``(release, note)`` with ``note`` None for Poisson.
    """
    if not history:
        raise ReconRiskError("the accountant's history is empty (no optimisation step was taken yet)")
    hist = [tuple(h) if isinstance(h, (list, tuple)) else h for h in history]

    def number(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    # malformed entries go on to Release.schedule, which names them (segments[i])
    live = [h for h in hist if not (isinstance(h, tuple) and len(h) == 3 and number(h[1]) and h[1] == 0)]
    if not live:
        raise ReconRiskError("every step of the history has sample rate 0: no step touched the data (ε = 0)")
    bad = [h for h in live if isinstance(h, tuple) and len(h) == 3 and number(h[0]) and h[0] == 0]
    if bad:
        raise ReconRiskError(f"the history holds steps without noise (noise_multiplier 0 at sample_rate {bad[0][1]:g}):"
                             " no finite guarantee (ε = ∞)")
    rel = release_cls.schedule(live, clip_norm=clip_norm)
    kind = v.choice("batch_sampling", batch_sampling, ("poisson", "shuffled", "sequential"))
    if kind == "poisson":
        return rel, None
    sigmas = {s.noise_multiplier for s in rel.segments}
    if len(sigmas) > 1:
        raise ReconRiskError(f"the data loader is not Poisson ({kind}) and the noise multiplier changed during "
                             "training; no sound release is built for that (see Release.shuffled)")
    epochs = max(1, math.ceil(sum(s.steps * s.sample_rate for s in rel.segments) - 1e-9))
    sigma = rel.segments[0].noise_multiplier
    why = (SHUFFLE_REFUSAL.split(";")[0] if kind == "shuffled" else
           "sequential batches are fixed before training (each example in one known batch per epoch)")
    note = (f"the data loader draws {kind} batches, not Poisson ones as the accountant assumed; {why}: "
            f"assumed the sound Release.shuffled(noise_multiplier={sigma:g}, epochs={epochs}) (replace-one)")
    return release_cls.shuffled(sigma, epochs, clip_norm), note


def loader_sampler(data_loader) -> str:
    """How a (PyTorch/Opacus) data loader draws batches: ``"poisson"``, ``"shuffled"`` or ``"sequential"``.

    Read from class names and attributes only (no ``torch`` import). Other batch samplers are refused.
    """
    bs = getattr(data_loader, "batch_sampler", None)
    name = type(bs).__name__
    if name in ("UniformWithReplacementSampler", "DistributedUniformWithReplacementSampler"):
        return "poisson"
    inner = getattr(bs, "sampler", None)
    inner_name = type(inner).__name__
    if name == "BatchSampler" and inner_name in ("RandomSampler", "DistributedSampler"):
        if getattr(inner, "replacement", False):
            raise ReconRiskError("the data loader samples with replacement (RandomSampler(replacement=True)); "
                                 "reconrisk has no analysis of that sampler")
        return "shuffled"
    if name == "BatchSampler" and inner_name == "SequentialSampler":
        return "sequential"
    raise ReconRiskError(f"data_loader must be an Opacus Poisson loader or a DataLoader with a RandomSampler or "
                         f"SequentialSampler; found batch sampler {name}({inner_name})")
