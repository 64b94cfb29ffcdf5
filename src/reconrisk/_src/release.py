"""What a private training run releases: the one description every layer reads.

A :class:`Release` plays the role of a ``dp_accounting`` event: an immutable,
validated description of DP-SGD (noise multiplier σ, sample rate q, number of
steps T, clip norm C, noise family, and the sampler that drew the batches:
Poisson, fixed size without replacement, or full batch — :data:`SAMPLERS`).
It converts to and from ``dp_accounting`` events (:meth:`Release.from_dp_event`,
:meth:`Release.to_dp_event`). Heterogeneous training
(σ or q changing during training, e.g. an Opacus accountant history) is a
release with several :class:`Segment` s. Parameters are validated here once
and then only read.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable, Mapping, Sequence

from . import _validate as v
from ._deprecated import deprecated_module_attributes, renamed_function, warn_renamed
from .errors import ReconRiskError
from .adapters import opacus_history as _opacus
from .adapters.opacus_history import SHUFFLE_REFUSAL, extend_history, loader_sampler  # noqa: F401  (re-exported)
from .mechanisms.base import Mechanism, Step, registered
from .mechanisms.gaussian import Gaussian, release_refusal, step_passes as _passes  # noqa: F401  (re-exported)
from .mechanisms.samplers import FixedBatch, NoAmplification, Poisson, Shuffled
from .mechanisms.traverse import steps as event_steps
from .mechanisms.von_mises_fisher import VonMisesFisher

#: How a release draws its batches. ``"poisson"``: every example independently with probability q
#: (add/remove-one neighbours); ``"fixed"``: a uniformly random batch of exactly ``batch_size`` of the
#: ``dataset_size`` examples, without replacement (replace-one / substitution neighbours, as
#: ``dp_accounting``'s ``SampledWithoutReplacementDpEvent``); ``"full"``: the whole data set every step
#: (q = 1, add/remove-one).
SAMPLERS = ("poisson", "fixed", "full")


def noise_families() -> tuple[str, ...]:
    """The noise families a release may name: the registered mechanisms a :class:`Segment` can hold (those with a
    ``level_name``: Hayes, Mahloujifar & Balle's (2023) Gaussian, Biswas et al.'s (2024) von Mises–Fisher)."""
    return tuple(n for n, c in registered(Mechanism).items() if c.level_name)


def _implemented_noise(noise) -> str:
    return v.choice("noise", noise, noise_families())


def _register_noise_family(name: str) -> None:
    """(Deprecated: a family is a registered mechanism.) Checks ``name`` is one."""
    _implemented_noise(name)


deprecated_module_attributes(__name__, {
    "NOISE_FAMILIES": (noise_families, "reconrisk._src.release.noise_families()"),
    "IMPLEMENTED_NOISE": (lambda: set(noise_families()), "reconrisk._src.release.noise_families()"),
    "register_noise_family": (lambda: renamed_function("register_noise_family", _register_noise_family),
                              "reconrisk._src.mechanisms.base.register"),
})


def is_full_batch(segments: Iterable["Segment"]) -> bool:
    """True when every segment samples the whole data set (q = 1): closed forms apply."""
    return all(s.sample_rate == 1.0 for s in segments)


@dataclass(frozen=True)
class Segment:
    """``steps`` DP-SGD steps at one noise level and sample rate.

    The noise level is a Gaussian **noise multiplier** σ (noise std σC) or, for von Mises–Fisher noise,
    a **concentration** κ (Biswas et al. 2024): exactly one of the two is set, the other is None.
    """

    noise_multiplier: float | None
    sample_rate: float
    steps: int
    concentration: float | None = None
    #: The typed mechanism of one step (:class:`~reconrisk._src.mechanisms.gaussian.Gaussian` or
    #: :class:`~reconrisk._src.mechanisms.von_mises_fisher.VonMisesFisher`), built from the level given.
    mechanism: Mechanism = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.concentration is None:
            object.__setattr__(self, "noise_multiplier", v.noise_multiplier("noise_multiplier", self.noise_multiplier))
            mechanism: Mechanism = Gaussian(self.noise_multiplier)
        else:
            if self.noise_multiplier is not None:
                raise ReconRiskError(
                    "a segment has a noise_multiplier (Gaussian noise) or a concentration (VMF noise), not both; "
                    f"found noise_multiplier={self.noise_multiplier!r} and concentration={self.concentration!r}")
            object.__setattr__(self, "concentration", v.positive("concentration", self.concentration))
            mechanism = VonMisesFisher(self.concentration)
        object.__setattr__(self, "sample_rate", v.sample_rate("sample_rate", self.sample_rate))
        object.__setattr__(self, "steps", v.steps("steps", self.steps))
        object.__setattr__(self, "mechanism", mechanism)

    @property
    def noise(self) -> str:
        """The noise family: the mechanism's registered name."""
        return self.mechanism.name

    @property
    def level(self) -> float:
        """The segment's noise level: its noise multiplier, or its concentration for VMF noise."""
        return self.noise_multiplier if self.concentration is None else self.concentration

    def to_dict(self) -> dict:
        key = "noise_multiplier" if self.concentration is None else "concentration"
        return {key: self.level, "sample_rate": self.sample_rate, "steps": self.steps}


@dataclass(frozen=True, init=False)
class Release:
    """A DP-SGD training run as the privacy analysis sees it.

    ``Release(noise_multiplier, sample_rate, steps, clip_norm=1.0)`` describes
    homogeneous training; :meth:`schedule` builds one from several segments.
    The privatised gradient of each step is ``Σ_{z∈B_t} clip_C(∇ℓ(θ_t, z)) +
    N(0, σ²C²I)`` — the noise is added to the **sum** (Hayes, Mahloujifar & Balle 2023, §1.1).

    ``noise="vmf"`` (Biswas et al. 2024, Alg. 2; build it with :meth:`vmf` or
    ``Release(concentration=κ, …)``): the clipped sum is normalised and replaced by a
    draw of VMF(g/‖g‖, κ). Such a release has a :attr:`concentration` and no noise
    multiplier (reading :attr:`noise_multiplier` or :attr:`noise_std` raises
    :class:`~reconrisk.errors.ReconRiskError`); :attr:`noise_scale` is what the
    simulator's noise function reads (σC or κ), and the (ε, δ) accounting is
    :func:`reconrisk._src.accounting.vmf.vmf_epsilon`, not the Gaussian one.

    ``stands_for`` is set only on a release built by :meth:`dominating`: the
    fixed-batch release this Poisson release is the exact dominating pair of
    (so an analysis of it can still say what was run, :attr:`as_run`). It is
    neither compared nor printed: two releases with the same segments, clip
    norm, noise and sampler are equal, whatever they stand for.

    ``zero_out_segments`` is set only where a fixed-batch release's segments do not give the noise the zero-out
    reference reads (:mod:`reconrisk._src.measures.rero_zeroout`: noise std σC against a shift of C per participation):
    Flower's mixed ``no-amplification`` ledger enters its every-client rounds at 2σ, the pair reading of a shift
    of C (:func:`reconrisk.integrations.flower_release.cohort_release`), while their noise is σC. It holds the
    run's (σ, q, steps) for that reference; neither compared nor printed.
    """

    segments: tuple[Segment, ...]
    clip_norm: float
    noise: str
    sampler: str = "poisson"
    stands_for: "Release | None" = field(default=None, compare=False, repr=False)
    zero_out_segments: "tuple[tuple[float, float, int], ...] | None" = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        noise_multiplier: float | None = None,
        sample_rate: float = 1.0,
        steps: int = 1,
        clip_norm: float = 1.0,
        noise: str | None = None,
        *,
        segments: Sequence[Segment] | None = None,
        concentration: float | None = None,
        sampler: str = "poisson",
    ) -> None:
        # the family: VMF when a concentration is given, Gaussian otherwise (or as named)
        if noise is None:
            noise = "vmf" if concentration is not None else (
                "vmf" if segments is not None and any(getattr(s, "concentration", None) is not None for s in segments)
                else "gaussian")
        noise = _implemented_noise(noise)
        if segments is None:
            if noise == "vmf":
                if noise_multiplier is not None:
                    raise ReconRiskError(
                        f"a VMF release has a concentration, not a noise multiplier; found noise_multiplier="
                        f"{noise_multiplier!r} (use Release.vmf(concentration, ...) or Release(concentration=..., "
                        "noise='vmf'))")
                if concentration is None:
                    raise ReconRiskError("concentration must be given for noise='vmf' (a number > 0); found None")
                segs: tuple[Segment, ...] = (Segment(None, sample_rate, steps, concentration=concentration),)
            else:
                if concentration is not None:
                    raise ReconRiskError(f"concentration is for noise='vmf' releases; found noise={noise!r}")
                if noise_multiplier is None:
                    raise ReconRiskError("noise_multiplier must be given (a number > 0); found None")
                segs = (Segment(noise_multiplier, sample_rate, steps),)
        else:
            if noise_multiplier is not None or concentration is not None:
                raise ReconRiskError("give either a noise level (noise_multiplier or concentration) or segments, not both")
            segs = tuple(segments)
            if not segs:
                raise ReconRiskError("segments must hold at least one segment; found none")
            for s in segs:
                if not isinstance(s, Segment):
                    raise ReconRiskError(f"segments must be Segment objects; found {s!r}")
                if s.noise != noise:
                    what = "a concentration" if noise == "vmf" else "a noise multiplier"
                    raise ReconRiskError(f"every segment of a noise={noise!r} release must have {what}; found {s!r}")
        if isinstance(sampler, str) and sampler.lower() in ("shuffle", "shuffled", "shuffling"):
            raise ReconRiskError(SHUFFLE_REFUSAL)
        sampler = v.choice("sampler", sampler, SAMPLERS)
        if sampler == "full" and not is_full_batch(segs):
            raise ReconRiskError(
                f"sampler='full' uses the whole data set every step, so sample_rate must be 1; found "
                f"{[s.sample_rate for s in segs]}")
        if sampler != "poisson" and noise != "gaussian":
            raise ReconRiskError(f"sampler={sampler!r} is analysed for Gaussian noise only; found noise={noise!r}")
        total = sum(s.steps for s in segs)
        if total > v.MAX_STEPS:
            raise ReconRiskError(f"a release may have at most {v.MAX_STEPS:g} steps in all; found {total} over "
                                 f"{len(segs)} segments")
        object.__setattr__(self, "segments", segs)
        object.__setattr__(self, "clip_norm", v.positive("clip_norm", clip_norm))
        object.__setattr__(self, "noise", noise)
        object.__setattr__(self, "sampler", sampler)
        object.__setattr__(self, "stands_for", None)
        object.__setattr__(self, "zero_out_segments", None)

    # -- constructors -------------------------------------------------------------
    @classmethod
    def schedule(cls, segments: Iterable[tuple[float, float, int] | Segment | Mapping], *, clip_norm: float = 1.0,
                 noise: str = "gaussian", sampler: str = "poisson") -> "Release":
        """From ``[(noise_multiplier, sample_rate, steps), …]``, or the mappings :meth:`Segment.to_dict` writes.

        This is also the shape of an Opacus accountant's ``history`` list, so
        ``Release.schedule(accountant.history)`` works directly, and of :meth:`to_dict`'s ``segments`` (the JSON
        round trip: ``Release.schedule(d["segments"], clip_norm=d["clip_norm"], noise=d["noise"])``). Adjacent
        segments with equal (σ, q) are merged; a step may differ from every other (cost linear in the entries,
        an invalid one named by its index). With ``noise="vmf"`` the tuples are ``(concentration, sample_rate, steps)``.
        """
        noise = _implemented_noise(noise)
        if isinstance(segments, (str, bytes, dict)) or not hasattr(segments, "__iter__"):
            raise ReconRiskError(
                f"segments must be a list of (noise_multiplier, sample_rate, steps); found {segments!r:.80}"
            )
        segs: list[Segment] = []
        vmf = noise == "vmf"
        level = "concentration" if vmf else "noise_multiplier"
        for i, item in enumerate(segments):
            if isinstance(item, Segment):
                seg = item
            else:
                try:
                    sigma, q, t = ((item[level], item["sample_rate"], item["steps"]) if isinstance(item, Mapping)
                                   and len(item) == 3 else item)
                except (TypeError, ValueError, KeyError):
                    raise ReconRiskError(f"segments[{i}] must be ({level}, sample_rate, steps); found {item!r}") from None
                try:
                    seg = Segment(None, q, t, concentration=sigma) if vmf else Segment(sigma, q, t)
                except ReconRiskError as exc:  # (which of 10⁴ entries: its index)
                    raise ReconRiskError(f"segments[{i}]: {exc}") from None
            if segs and (segs[-1].noise_multiplier, segs[-1].concentration, segs[-1].sample_rate) == (
                    seg.noise_multiplier, seg.concentration, seg.sample_rate):
                segs[-1] = Segment(seg.noise_multiplier, seg.sample_rate, segs[-1].steps + seg.steps, seg.concentration)
            else:
                segs.append(seg)
        return cls(segments=segs, clip_norm=clip_norm, noise=noise, sampler=sampler)

    from_opacus_history = schedule

    @classmethod
    def from_leaves(cls, steps, *, clip_norm: float = 1.0) -> "Release":
        """Deprecated spelling of :meth:`from_steps` (removed in the next release)."""
        warn_renamed("Release.from_leaves()", "Release.from_steps()", "reconrisk")
        return cls.from_steps(steps, clip_norm=clip_norm)

    @classmethod
    def fixed_batch(cls, noise_multiplier: float, batch_size: int, dataset_size: int, steps: int,
                    clip_norm: float = 1.0) -> "Release":
        """DP-SGD on uniformly random batches of exactly ``batch_size`` of ``dataset_size`` examples (no replacement).

        The neighbouring relation is replace-one (substitution): a fixed batch size
        is public, so adding or removing an example is not the relation this sampler
        protects (``dp_accounting``'s ``SampledWithoutReplacementDpEvent`` likewise).
        The analysis rests on Dong, Roth & Su 2022, Thm 4.2 (q = batch_size/dataset_size,
        f_q = q·G_{2/σ} + (1 − q)·Id, the Poisson-subsampled Gaussian's remove pair at noise
        multiplier σ/2, :meth:`dominating`): ReRo, re-identification and attribute inference
        compose f_q (one reference law: the slot never sampled), or, where smaller, read the zero-out
        reference (the target's clipped gradient replaced by 0, sensitivity C:
        :mod:`reconrisk._src.measures.rero_zeroout`); ε, δ, the trade-off curve and the membership measures
        compose the symmetrised C_q = min{f_q, f_q⁻¹}** (pairs, either orientation at every
        step; :attr:`reconrisk._src.analysis.privacy.PrivacyAnalysis.pair`).
        """
        b = v.integer("batch_size", batch_size, minimum=1)
        n = v.integer("dataset_size", dataset_size, minimum=1)
        if b > n:
            raise ReconRiskError(f"batch_size must be <= dataset_size={n}; found {b}")
        return cls(noise_multiplier, b / n, steps, clip_norm, sampler="fixed")

    @classmethod
    def shuffled(cls, noise_multiplier: float, epochs: int, clip_norm: float = 1.0) -> "Release":
        """The sound, certifiable stand-in for shuffled batches: ``epochs`` full-batch steps, replace-one.

        No tight analysis of shuffling is known (Chua et al. 2024). Revealing which
        batch holds each example can only help the adversary; given the
        permutation, neighbours (replace-one) differ in one batch per pass by a
        clipped-gradient difference of norm ≤ 2C, the other steps being identical.
        So the shuffled run is at least as private as ``epochs`` Gaussian
        mechanisms of sensitivity 2C — exactly :meth:`fixed_batch` with
        batch_size = dataset_size — for pairs (ε, δ, membership). ``epochs`` counts passes, not loader
        epochs: a loader that shows an example m times in one step counts m² there (sensitivity 2mC), so
        ``epochs`` = K = Σ_t m_t² at the worst example (:meth:`LoaderPlan.passes
        <reconrisk._src.adapters.opacus_loaders.LoaderPlan.passes>`, what :meth:`from_opacus` reads from a loader).
        Against the zero-out reference (the target's clipped gradient replaced by 0, one reference for every
        candidate) the same step moves the sum by mC, so ReRo and the one-reference measures are
        Φ(Φ⁻¹(κ) + √epochs/σ) (:mod:`reconrisk._src.measures.rero_zeroout`). The bracket is certified for that model and an
        upper bound for the shuffled run; its lower end is not a lower bound on the shuffled run.
        """
        return cls(noise_multiplier, 1.0, v.integer("epochs", epochs, minimum=1), clip_norm, sampler="fixed")

    @classmethod
    def from_dp_event(cls, event, *, clip_norm: float = 1.0) -> "Release":
        """The release a ``dp_accounting`` ``DpEvent`` describes, when it is DP-SGD with Gaussian noise.

        Read: ``GaussianDpEvent`` (one full-batch step), ``PoissonSampledDpEvent``
        and ``SampledWithoutReplacementDpEvent`` of a Gaussian, ``SelfComposedDpEvent``,
        ``ComposedDpEvent`` and ``NoOpDpEvent``. Units: ``dp_accounting``'s noise
        multiplier is relative to the sensitivity of the neighbouring relation; the
        clipped sum of DP-SGD has add/remove sensitivity C but replace-one
        sensitivity 2C, so a without-replacement event's ``GaussianDpEvent(s)`` is a
        release with noise multiplier σ = 2s (noise std 2sC), and :meth:`to_dp_event`
        writes σ/2. Poisson and without-replacement steps
        cannot share one release (different neighbouring relations); a plain Gaussian
        step joins either (q = 1). Other events (Laplace, randomized response, …) are
        refused in one line naming the event: analyse them with
        :meth:`reconrisk._src.analysis.privacy.PrivacyAnalysis.from_dp_event`.
        """
        return cls.from_steps(event_steps(event), clip_norm=clip_norm)

    @classmethod
    def from_steps(cls, steps, *, clip_norm: float = 1.0) -> "Release":
        """The release of a sequence of :class:`~reconrisk._src.mechanisms.base.Step` (what
        :func:`reconrisk._src.mechanisms.traverse.steps` reads off an event; see :meth:`from_dp_event`);
        refused in one line where :func:`release_refusal` names a reason."""
        steps = tuple(steps)
        why = release_refusal(steps)
        if why is not None:
            raise ReconRiskError(why)
        fixed = {s.relation for s in steps} == {"replace_one"}
        # dp_accounting's noise multiplier is relative to the relation's sensitivity; DP-SGD's clipped sum has
        # replace-one sensitivity 2C, so its noise multiplier (std / C) is twice the event's
        scale = 2.0 if fixed else 1.0
        return cls.schedule([(scale * s.mechanism.noise_multiplier, s.sampler.rate, _passes(s)) for s in steps],
                            clip_norm=clip_norm, sampler="fixed" if fixed else "poisson")

    def to_dp_event(self):
        """This release as a ``dp_accounting`` ``DpEvent`` (to hand it to ``dp_accounting``'s accountants).

        Poisson: ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), T)`` per segment (a
        plain ``GaussianDpEvent`` when q = 1); fixed batches: ``SampledWithoutReplacementDpEvent`` of
        ``GaussianDpEvent(σ/2)`` (replace-one sensitivity 2C, see :meth:`from_dp_event`) with
        sample_size/source_dataset_size the reduced fraction of q (denominator ≤ 10⁹), which is what
        ``dp_accounting`` reads (q); several segments: a ``ComposedDpEvent``.
        """
        import dp_accounting as dpa

        if self.noise != "gaussian":
            raise ReconRiskError(f"to_dp_event describes Gaussian DP-SGD; found noise={self.noise!r}")
        out = []
        for s in self.segments:
            g = dpa.GaussianDpEvent(s.noise_multiplier / (2.0 if self.sampler == "fixed" else 1.0))
            if self.sampler == "fixed":  # (q = 1 too: a plain GaussianDpEvent would read as add/remove)
                f = Fraction(s.sample_rate).limit_denominator(10**9)
                e = dpa.SampledWithoutReplacementDpEvent(f.denominator, f.numerator, g)
            elif s.sample_rate == 1.0:
                e = g
            else:
                e = dpa.PoissonSampledDpEvent(s.sample_rate, g)
            out.append(e if s.steps == 1 else dpa.SelfComposedDpEvent(e, s.steps))
        return out[0] if len(out) == 1 else dpa.ComposedDpEvent(out)

    @property
    def neighbouring(self) -> str:
        """The neighbouring relation the release's guarantee is for: ``"add_remove"`` or ``"replace_one"``."""
        return "replace_one" if self.sampler == "fixed" else "add_remove"

    def dominating(self) -> "Release":
        """The Poisson-subsampled Gaussian release whose remove pair is this release's per-step reference pair.

        ``"poisson"`` and ``"full"``: the release itself. ``"fixed"`` (sampling
        without replacement, replace-one): the same schedule at noise multiplier σ/2, whose
        one-step remove pair — (1 − q)N(0, 1) + qN(μ, 1) against N(0, 1), μ = 2/σ, trade-off
        f_q = q·G_μ + (1 − q)·Id — is what one fixed-size step is compared with. What that
        comparison covers (Dong, Roth & Su 2022, Thm 4.2; the clipped sum moves by at most 2C):

        * **one reference law**: against the run in which the target's slot is never sampled,
          every step of the run with the target has trade-off ≥ f_q, attained (target gradient
          +Ce, the others −Ce); composed T times this is exactly the analysis of this release,
          so ReRo, re-identification and attribute inference (Hayes, Mahloujifar & Balle 2023,
          Cor. 4, one reference) are at most the numbers of this release, two-sided (they report
          the smaller of these and the zero-out reference's, :mod:`reconrisk._src.measures.rero_zeroout`);
        * **a pair of neighbours** is *not* covered by f_q alone: T(M(D), M(D′)) ≥ f_q does not
          hold for every ordered replace-one pair — with the other gradients +Ce, the target's
          +Ce and the replacement's −Ce the target's run is the unshifted law and the
          reference's the mixture, whose trade-off is f_q⁻¹ (σ 0.6, q 0.5, T = 1: TPR 0.9522 at
          FPR 0.5 where f_q gives 0.7498), and an adaptive adversary picks the orientation at
          every step. Each step is C_q-DP, C_q = min{f_q, f_q⁻¹}** (symmetric), so ε, δ, the
          trade-off curve and the membership measures compose C_q
          (:attr:`reconrisk._src.analysis.privacy.PrivacyAnalysis.pair`,
          :func:`reconrisk._src.accounting.pld.symmetrised`), never this release's two directions.
        """
        if self.sampler != "fixed":
            return self
        segs = [Segment(s.noise_multiplier / 2.0, s.sample_rate, s.steps) for s in self.segments]
        out = Release(segments=segs, clip_norm=self.clip_norm, noise=self.noise)
        object.__setattr__(out, "stands_for", self)  # the field documented in the class docstring
        return out

    @property
    def as_run(self) -> "Release":
        """The release that was run: itself, or for a :meth:`dominating` release the one it stands for."""
        return self if self.stands_for is None else self.stands_for

    @classmethod
    def from_opacus(cls, privacy_engine_or_accountant, *, clip_norm: float = 1.0, data_loader=None) -> "Release":
        """The release an Opacus ``PrivacyEngine`` or accountant has accounted so far.

        Reads the accountant's ``history`` — ``[(noise_multiplier, sample_rate,
        num_steps), …]`` in every Opacus accountant — without importing Opacus.
        Every Opacus accountant assumes Poisson sampling (what ``make_private(poisson_sampling=True)``'s
        ``DPDataLoader`` does). Pass the ``data_loader`` that trained to have that checked:

        * Opacus's Poisson loader (``UniformWithReplacementSampler``): the history as it is;
        * a shuffling or sequential loader (``make_private(poisson_sampling=False)``, a plain
          ``DataLoader``, ``RandomSampler(num_samples=…)``, ``DistributedSampler``): the history does
          not describe it, and no tight analysis of shuffling is known; a ``UserWarning`` says so in
          one line and the sound stand-in :meth:`shuffled` (σ, K) is returned, K the passes the loader
          can give one example over the steps taken, read from the loader
          (:class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan`) — never a silent Poisson number, never
          one pass per loader epoch by assumption — over the loader iterations the run took where a
          ``ReconRiskAccountant`` watched them (its ``loader_run``), else in the loader's order (said so);
        * any other loader (a custom sampler or batch sampler, an ``IterableDataset``): refused in one
          line naming it.

        Without ``data_loader`` the accountant's own ``loader`` and ``batch_sampling`` are read where it has them (a
        :class:`~reconrisk.integrations.opacus.ReconRiskAccountant` learns it from ``make_private``), else the Poisson
        history is taken as it is (what the accountant assumed). Steps at sample rate 0 never touch the
        data and are dropped; a step without noise (noise multiplier 0) is refused (ε = ∞). The one
        reading of a history: :func:`opacus_history_release` (:func:`reconrisk._src.adapters.opacus_history.read_history`).
        """
        hist, kind = _opacus.accountant_history(privacy_engine_or_accountant, data_loader)
        rel, note = opacus_history_release(hist, kind, clip_norm=clip_norm)
        if note:
            warnings.warn(note, UserWarning, stacklevel=2)
        return rel

    # -- views ---------------------------------------------------------------------
    @property
    def homogeneous(self) -> bool:
        return len(self.segments) == 1

    def _single(self, name: str):
        if not self.homogeneous:
            raise ReconRiskError(f"{name} is not defined for a release of {len(self.segments)} segments; read .segments")
        return getattr(self.segments[0], name)

    @property
    def full_batch(self) -> bool:
        """Every segment uses the whole data set (sample rate 1): the exact GDP closed forms apply."""
        return is_full_batch(self.segments)

    @property
    def noise_multiplier(self) -> float:
        """σ of Gaussian noise (std σC on the summed clipped gradients); a VMF release has none (raises)."""
        if self.noise == "vmf":
            raise ReconRiskError(
                "noise_multiplier is not defined for a VMF release (noise='vmf'); its noise level is .concentration")
        return self._single("noise_multiplier")

    @property
    def sample_rate(self) -> float:
        return self._single("sample_rate")

    @property
    def steps(self) -> int:
        return sum(s.steps for s in self.segments)

    @property
    def noise_std(self) -> float:
        """Standard deviation σC of the Gaussian noise added to the summed clipped gradients (not for VMF noise)."""
        if self.noise == "vmf":
            raise ReconRiskError("noise_std is the standard deviation of Gaussian noise; a VMF release (noise='vmf') "
                                 "has a .concentration instead")
        return self.noise_multiplier * self.clip_norm

    @property
    def noise_scale(self) -> float:
        """The scalar the simulator's noise function reads (:mod:`reconrisk._src.train.noise`): σC, or κ for VMF noise."""
        return self.concentration if self.noise == "vmf" else self.noise_std

    @classmethod
    def vmf(cls, concentration: float, sample_rate: float = 1.0, steps: int = 1, clip_norm: float = 1.0) -> "Release":
        """DP-SGD with von Mises–Fisher noise of concentration κ (Biswas et al. 2024, Alg. 2)."""
        return cls(None, sample_rate, steps, clip_norm, noise="vmf", concentration=concentration)

    @property
    def concentration(self) -> float:
        """κ of a VMF release (Biswas et al. 2024)."""
        if self.noise != "vmf":
            raise ReconRiskError(f"concentration is defined for noise='vmf' releases; this one has noise={self.noise!r}")
        return self._single("concentration")

    def to_dict(self) -> dict:
        out: dict = {"clip_norm": self.clip_norm, "noise": self.noise, "steps": self.steps}
        if self.sampler != "poisson":
            out["sampler"] = self.sampler
        if self.homogeneous:
            out.update((k, x) for k, x in self.segments[0].to_dict().items() if k != "steps")
        else:
            out["segments"] = [s.to_dict() for s in self.segments]
        return out


def gaussian_release(release, what: str) -> "Release":
    """``release`` checked to be a :class:`Release` with Gaussian noise, for ``what`` (a Gaussian-only computation).

    The PLD engine, the RDP curves, the Monte-Carlo estimator and the risk
    measures model the Poisson-subsampled *Gaussian* mechanism, so the release
    returned is :meth:`Release.dominating` (itself, except for fixed-size
    batches: the same schedule at σ/2, whose remove pair is the one-reference pair; the pair
    measures of such a release compose the symmetrised curve instead, see
    :meth:`Release.dominating`); a VMF release
    (Biswas et al. 2024) must be refused there with a one-line reason.
    """
    if not isinstance(release, Release):
        raise ReconRiskError(f"release must be a reconrisk.Release; found {type(release).__name__}")
    if release.noise != "gaussian":
        hint = (" (VMF: its RDP curve through the optimal conversion, GuaranteeAnalysis.from_release(release, dim=p))"
                if release.noise == "vmf" else "")
        raise ReconRiskError(f"{what} is for noise='gaussian' releases; found noise={release.noise!r}{hint}")
    return release.dominating()


def opacus_history_release(history, batch_sampling="poisson", *, clip_norm: float = 1.0
                           ) -> tuple[Release, str | None]:
    """(release, note) an Opacus history ``[(σ, q, steps), …]`` accounts for, given how the batches were drawn
    (``"poisson"``, or the loader's :class:`~reconrisk._src.adapters.opacus_loaders.LoaderPlan`;
    :func:`reconrisk._src.adapters.opacus_history.read_history`: the reading and why it is sound).

    The adapter returns plain data (the live ``(σ, q, steps)`` segments, then the sampler, σ, the passes K and a
    note); the release is built here from it, and ``Release.schedule`` validates the segments first (naming a
    malformed entry)."""
    live = _opacus.live_segments(history, batch_sampling)
    rel = Release.schedule(live, clip_norm=clip_norm)
    reading = _opacus.read_history([(s.noise_multiplier, s.sample_rate, s.steps) for s in rel.segments],
                                   batch_sampling)
    if reading.sampler == "poisson":
        return rel, None
    return Release.shuffled(reading.noise_multiplier, reading.passes, clip_norm), reading.note
