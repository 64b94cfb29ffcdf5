"""The Opacus adapter of :class:`~reconrisk._src.release.Release`: reading an Opacus accountant's history.

Every Opacus accountant keeps ``history = [(noise_multiplier, sample_rate, num_steps), …]`` and assumes
Poisson sampling. :func:`read_history` reads a history into what was run, as plain data — the segments as they
are, or, for a
loader that is not Poisson (:func:`~reconrisk._src.adapters.opacus_loaders.loader_plan`: shuffled, sequential,
repeated passes, ``DistributedSampler``), the sound stand-in ``Release.shuffled(σ, K)``'s σ and K, K the passes
the loader can give one example, with a one-line note (a :class:`HistoryReading`) — and :func:`accountant_history` finds the history of a
``PrivacyEngine`` or an accountant. What users call is :meth:`Release.from_opacus
<reconrisk._src.release.Release.from_opacus>` (and :func:`reconrisk.integrations.opacus.release_from_opacus`).

Neither Opacus nor torch is imported (class names and attributes only), and neither is
:mod:`reconrisk._src.release`, nor handed to this module: it returns numbers, and the release builds itself from them
(:func:`reconrisk._src.release.opacus_history_release`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .. import _validate as v
from ..errors import ReconRiskError
from .opacus_loaders import LoaderPlan, LoaderRun, loader_plan

#: The non-Poisson kinds an accountant's ``batch_sampling`` may name (a LoaderPlan's ``kind``).
KINDS = ("shuffled", "sequential", "with_replacement")

__all__ = ["KINDS", "SHUFFLE_REFUSAL", "LoaderPlan", "LoaderRun", "HistoryReading", "accountant_history", "extend_history",
           "live_segments", "loader_plan", "loader_sampler", "read_history"]

#: One line for shuffled batches: said wherever a shuffling sampler is asked for.
SHUFFLE_REFUSAL = (
    "shuffled batches (a random permutation cut into batches each epoch) have no known tight privacy analysis "
    "(Chua et al. 2024 show Poisson numbers can understate it); certify the sound bound instead: "
    "Release.shuffled(noise_multiplier, epochs) (each example's batch revealed: one Gaussian step of "
    "replace-one sensitivity 2C per pass over the data; Release.from_opacus(..., data_loader=loader) counts a "
    "loader's passes)")


def accountant_history(privacy_engine_or_accountant, data_loader=None) -> tuple[list, "str | LoaderPlan"]:
    """(history, batch sampling) of an Opacus ``PrivacyEngine`` or accountant (the engine holds its accountant).

    The batch sampling is the accountant's own ``loader_run`` where it has one (the loader iterations a
    :class:`~reconrisk.integrations.opacus.ReconRiskAccountant` observed; when ``data_loader`` is given too, only
    if that loader's plan is the run's), else ``data_loader``'s :func:`loader_plan` when given (``"poisson"`` for
    Opacus's Poisson loader), else the accountant's ``loader`` plan or ``batch_sampling`` where it has one, else
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
    run = getattr(acct, "loader_run", None)
    run = run if isinstance(run, LoaderRun) else None
    if data_loader is not None:
        plan = loader_plan(data_loader)
        return hist, (run if run is not None and run.plan == plan else plan or "poisson")
    return hist, run or getattr(acct, "loader", None) or getattr(acct, "batch_sampling", "poisson")


def extend_history(history: list, noise_multiplier: float, sample_rate: float) -> None:
    """Append one step to an Opacus-style history ``[(σ, q, steps), …]`` (what :meth:`Release.schedule` reads):
    merged into the last entry when σ and q repeat, a new entry otherwise."""
    if history and history[-1][0] == noise_multiplier and history[-1][1] == sample_rate:
        history[-1] = (noise_multiplier, sample_rate, history[-1][2] + 1)
    else:
        history.append((noise_multiplier, sample_rate, 1))


class HistoryReading(NamedTuple):
    """What an Opacus history and its loader say was run, as plain data (:func:`read_history`).

    ``sampler`` ``"poisson"``: the ``segments`` ``(σ, q, steps)`` as they are (``note`` None). ``"shuffled"``: the
    sound stand-in ``Release.shuffled(noise_multiplier, passes)``, ``note`` the one line the caller warns with."""

    sampler: str
    segments: tuple
    noise_multiplier: float | None
    passes: int | None
    note: str | None


def live_segments(history, batch_sampling="poisson") -> list:
    """The history's entries that touch the data (q = 0 dropped), checked for what no release can hold (an empty
    history, steps without noise, a loader that was refused); malformed entries are left for the release to name."""
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
    if isinstance(batch_sampling, str) and batch_sampling == "unknown":  # what an accountant saves then
        raise ReconRiskError("the run's data loader has no analysis reconrisk can prove (batch_sampling 'unknown', "
                             "its sampler was refused when training began): nothing is certified for it")
    return live


def read_history(segments, batch_sampling="poisson") -> HistoryReading:
    """What an Opacus history ``[(σ, q, steps), …]`` says was run, given how the batches were drawn.

    Plain data only: this module never sees :class:`~reconrisk._src.release.Release` nor calls it back.
    :func:`live_segments` checks the history and drops the steps that never touch the data; the release
    validates those ``(σ, q, steps)`` (``Release.schedule``, which names a malformed entry); :func:`read_history`
    reads the validated numbers into a :class:`HistoryReading`, from which :func:`reconrisk._src.release.opacus_history_release`
    builds the release. ``batch_sampling`` is ``"poisson"`` — the history as it is
    (Opacus's accountants assume Poisson sampling) — or the :class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan`
    of the loader that drew the batches (:func:`~reconrisk._src.adapters.opacus_loaders.loader_plan`). For a plan the
    history (Opacus records q = 1/len(loader) per step whatever the loader) does not describe the run; the
    sound stand-in :meth:`Release.shuffled` (σ, K) is returned with a one-line note — the caller warns —
    where K = ``plan.passes(T)`` is the most any one example's gradient can weigh over the T steps taken
    (Σ_t m_t², m_t its copies in step t: a full pass per loader epoch for a plain ``DataLoader``, ⌈num_samples/n⌉
    for ``RandomSampler(num_samples=…)``, the padding of ``DistributedSampler``…; why that is exactly a
    composition of Gaussian mechanisms of sensitivity 2C: :mod:`reconrisk._src.adapters.opacus_loaders`). Every step
    must be one loader batch (q·len(loader) = 1: no gradient accumulation), else it is refused. A bare
    ``"sequential"`` (a saved state that names no loader) is read as a ``SequentialSampler`` over the data — one
    pass per loader epoch — and the note says that was assumed; a bare ``"shuffled"`` or ``"with_replacement"``
    is refused (an earlier state said ``"shuffled"`` for ``RandomSampler(num_samples=…)`` and
    ``DistributedSampler`` too: the passes are not known).

    ``batch_sampling`` may also be a :class:`~reconrisk._src.adapters.opacus_loaders.LoaderRun`: the loader's plan and
    the iterations the run actually took (each ``iter(loader)`` a fresh pass of the sampler); then K =
    ``run.passes(T)``, Σ over iterations of the plan's worst count for that iteration's batches — a loop that
    breaks out of the loader or restarts it (``next(iter(loader))`` every step) is counted as it ran. With a
    bare plan the steps are assumed to run in the loader's order (each loader epoch to its end but the last),
    and the note says so.

    Steps at q = 0 are dropped (they never touch the data); a step with σ = 0 and q > 0 is refused (no
    finite guarantee).
    """
    segs = tuple((float(s), float(q), int(t)) for s, q, t in segments)  # validated by the release already
    run = batch_sampling if isinstance(batch_sampling, LoaderRun) else None
    plan = run.plan if run else batch_sampling if isinstance(batch_sampling, LoaderPlan) else None
    kind = plan.kind if plan else v.choice("batch_sampling", batch_sampling, ("poisson",) + KINDS)
    if kind == "poisson":
        return HistoryReading("poisson", segs, None, None, None)
    sigmas = {s for s, _, _ in segs}
    if len(sigmas) > 1:
        raise ReconRiskError(f"the data loader is not Poisson ({kind}) and the noise multiplier changed during "
                             "training; no sound release is built for that (see Release.shuffled)")
    sigma = segs[0][0]
    if plan is None and kind == "with_replacement":
        raise ReconRiskError("batches drawn with replacement, and the loader is not given: how often one example "
                             "was drawn is not known (pass data_loader=, or use Poisson sampling)")
    if plan is None and kind == "shuffled":  # an older state said so for RandomSampler(num_samples=…) too
        raise ReconRiskError("shuffled batches, and the loader is not given: how many passes one loader epoch gave "
                             "an example is not known (RandomSampler(num_samples=…) and DistributedSampler's padding "
                             "repeat examples); pass data_loader=, or use Poisson sampling")
    if plan is None:  # "sequential" naming no loader: SequentialSampler, one pass per loader epoch
        epochs = max(1, math.ceil(sum(t * q for _, q, t in segs) - 1e-9))
        note = (f"the data loader draws {kind} batches, not Poisson ones as the accountant assumed, and its sampler "
                f"is not named, so a SequentialSampler was assumed (each example once per loader epoch; a started "
                f"epoch counts whole): assumed the sound Release.shuffled(noise_multiplier={sigma:g}, "
                f"epochs={epochs}) (replace-one); pass data_loader= to count the loader's own passes")
        return HistoryReading("shuffled", segs, sigma, epochs, note)
    off = [q for _, q, _ in segs if abs(q * plan.batches - 1) > 1e-9]
    if off:
        raise ReconRiskError(f"the history's sample rate {off[0]:g} is not 1/len(data_loader) = 1/{plan.batches} "
                             "(gradient accumulation, or another loader): the passes per step are not known; "
                             "use Poisson sampling")
    steps = sum(t for _, _, t in segs)
    passes = run.passes(steps) if run else plan.passes(steps)
    if run is None:
        how = "the steps taken in the loader's order (each loader epoch run to its end but the last)"
    else:
        how = f"counted over the {len(run.iterations)} iterations of the loader the run took"
        if run.assumed_steps:
            how += f" (the first {run.assumed_steps} steps, recorded before, in the loader's order)"
    note = (f"the data loader draws {kind} batches ({plan.describe()}), not Poisson ones as the accountant assumed; "
            f"{steps} steps weigh an example at most {passes} passes (Σ over steps of its copies²): assumed the "
            f"sound Release.shuffled(noise_multiplier={sigma:g}, epochs={passes}) (replace-one), {how}")
    return HistoryReading("shuffled", segs, sigma, passes, note)


def loader_sampler(data_loader) -> str:
    """How a (PyTorch/Opacus) data loader draws batches: ``"poisson"``, ``"shuffled"``, ``"sequential"`` or
    ``"with_replacement"`` (the :class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan`'s kind).

    Read from class names and attributes only (no ``torch`` import). A loader whose participation cannot be
    proved is refused in one line (:func:`~reconrisk._src.adapters.opacus_loaders.loader_plan`).
    """
    plan = loader_plan(data_loader)
    return "poisson" if plan is None else plan.kind
