"""What a private training run releases: the one description every layer reads.

A :class:`Release` plays the role of a ``dp_accounting`` event: an immutable,
validated description of DP-SGD (noise multiplier σ, Poisson sample rate q,
number of steps T, clip norm C, noise family). Heterogeneous training
(σ or q changing during training, e.g. an Opacus accountant history) is a
release with several :class:`Segment` s. Parameters are validated here once
and then only read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from . import _validate as v
from .errors import ReconRiskError

#: Noise families a release may name (Hayes, Mahloujifar & Balle's (2023) Gaussian; Biswas et al.'s (2024) von Mises–Fisher).
NOISE_FAMILIES = ("gaussian", "vmf")
#: Families some mechanism actually implements. A family is added here by the
#: module that implements it (:func:`register_noise_family`), so that a
#: ``Release(noise="vmf")`` is refused until VMF noise exists instead of
#: silently giving Gaussian results.
IMPLEMENTED_NOISE: set[str] = {"gaussian", "vmf"}  # vmf: mechanisms/vmf.py, train/noise.py (Biswas et al. 2024)


def register_noise_family(name: str) -> None:
    """Mark a noise family of :data:`NOISE_FAMILIES` as implemented (called by the mechanism's module)."""
    IMPLEMENTED_NOISE.add(v.choice("noise", name, NOISE_FAMILIES))


def _implemented_noise(noise) -> str:
    noise = v.choice("noise", noise, NOISE_FAMILIES)
    if noise not in IMPLEMENTED_NOISE:
        raise ReconRiskError(
            f"noise must be an implemented noise family, one of {sorted(IMPLEMENTED_NOISE)}; found {noise!r} "
            "(known but not implemented yet)"
        )
    return noise


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

    def __post_init__(self) -> None:
        if self.concentration is None:
            object.__setattr__(self, "noise_multiplier", v.noise_multiplier("noise_multiplier", self.noise_multiplier))
        else:
            if self.noise_multiplier is not None:
                raise ReconRiskError(
                    "a segment has a noise_multiplier (Gaussian noise) or a concentration (VMF noise), not both; "
                    f"found noise_multiplier={self.noise_multiplier!r} and concentration={self.concentration!r}")
            object.__setattr__(self, "concentration", v.positive("concentration", self.concentration))
        object.__setattr__(self, "sample_rate", v.sample_rate("sample_rate", self.sample_rate))
        object.__setattr__(self, "steps", v.steps("steps", self.steps))

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
    :func:`reconrisk.accounting.vmf.vmf_epsilon`, not the Gaussian one.
    """

    segments: tuple[Segment, ...]
    clip_norm: float
    noise: str

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
                if (s.concentration is not None) != (noise == "vmf"):
                    what = "a concentration" if noise == "vmf" else "a noise multiplier"
                    raise ReconRiskError(f"every segment of a noise={noise!r} release must have {what}; found {s!r}")
        object.__setattr__(self, "segments", segs)
        object.__setattr__(self, "clip_norm", v.positive("clip_norm", clip_norm))
        object.__setattr__(self, "noise", noise)

    # -- constructors -------------------------------------------------------------
    @classmethod
    def schedule(
        cls,
        segments: Iterable[tuple[float, float, int] | Segment],
        *,
        clip_norm: float = 1.0,
        noise: str = "gaussian",
    ) -> "Release":
        """From ``[(noise_multiplier, sample_rate, steps), …]``.

        This is also the shape of an Opacus accountant's ``history`` list, so
        ``Release.schedule(accountant.history)`` works directly. Adjacent
        segments with equal (σ, q) are merged. With ``noise="vmf"`` the tuples
        are ``(concentration, sample_rate, steps)``.
        """
        noise = _implemented_noise(noise)
        if isinstance(segments, (str, bytes, dict)) or not hasattr(segments, "__iter__"):
            raise ReconRiskError(
                f"segments must be a list of (noise_multiplier, sample_rate, steps); found {segments!r:.80}"
            )
        segs: list[Segment] = []
        for i, item in enumerate(segments):
            if isinstance(item, Segment):
                seg = item
            else:
                try:
                    sigma, q, t = item
                except (TypeError, ValueError):
                    raise ReconRiskError(
                        f"segments[{i}] must be (noise_multiplier, sample_rate, steps); found {item!r}"
                    ) from None
                seg = Segment(None, q, t, concentration=sigma) if noise == "vmf" else Segment(sigma, q, t)
            if segs and (segs[-1].noise_multiplier, segs[-1].concentration, segs[-1].sample_rate) == (
                    seg.noise_multiplier, seg.concentration, seg.sample_rate):
                segs[-1] = Segment(seg.noise_multiplier, seg.sample_rate, segs[-1].steps + seg.steps, seg.concentration)
            else:
                segs.append(seg)
        return cls(segments=segs, clip_norm=clip_norm, noise=noise)

    from_opacus_history = schedule

    @classmethod
    def from_opacus(cls, privacy_engine_or_accountant, *, clip_norm: float = 1.0) -> "Release":
        """The release an Opacus ``PrivacyEngine`` or accountant has accounted so far.

        Reads the accountant's ``history`` — ``[(noise_multiplier, sample_rate,
        num_steps), …]`` in every Opacus accountant — without importing Opacus.
        """
        obj = privacy_engine_or_accountant
        hist = getattr(getattr(obj, "accountant", obj), "history", None)  # a PrivacyEngine holds its accountant
        if hist is None:
            raise ReconRiskError(
                "privacy_engine_or_accountant must be an Opacus PrivacyEngine or accountant (with .history); "
                f"found {type(obj).__name__}"
            )
        if not hist:
            raise ReconRiskError("the accountant's history is empty (no optimisation step was taken yet)")
        return cls.schedule([tuple(h) for h in hist], clip_norm=clip_norm)

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
        """The scalar the simulator's noise function reads (:mod:`reconrisk.train.noise`): σC, or κ for VMF noise."""
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
        if self.homogeneous:
            out.update((k, x) for k, x in self.segments[0].to_dict().items() if k != "steps")
        else:
            out["segments"] = [s.to_dict() for s in self.segments]
        return out


def gaussian_release(release, what: str) -> "Release":
    """``release`` checked to be a :class:`Release` with Gaussian noise, for ``what`` (a Gaussian-only computation).

    The PLD engine, the RDP curves, the Monte-Carlo estimator and the risk
    measures model the subsampled *Gaussian* mechanism; a VMF release
    (Biswas et al. 2024) must be refused there with a one-line reason.
    """
    if not isinstance(release, Release):
        raise ReconRiskError(f"release must be a reconrisk.Release; found {type(release).__name__}")
    if release.noise != "gaussian":
        hint = " (VMF: see reconrisk.accounting.vmf)" if release.noise == "vmf" else ""
        raise ReconRiskError(f"{what} is for noise='gaussian' releases; found noise={release.noise!r}{hint}")
    return release
