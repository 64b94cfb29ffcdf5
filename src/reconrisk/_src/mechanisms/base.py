"""What every mechanism and sampler is: :class:`Mechanism`, :class:`Sampler`, :class:`Step`, and the one registry.

A mechanism (Gaussian, Laplace, randomized response, von Mises–Fisher, …) and a sampler (Poisson, fixed batch,
no amplification, …) are frozen, validated objects, one module each. What the analysis needs of one step of a
run — its privacy-loss distribution (PLD) for the relation it is read under, its RDP curve, its pure ε, its μ-GDP
— is a method of the mechanism, asked with the sampler that amplified it; ``supports(sampler)`` says, with a
one-line reason, which pairings it can analyse. A run is a sequence of :class:`Step` (mechanism, sampler,
count); one traversal (:mod:`.traverse`) turns a ``dp_accounting`` event into that sequence, one event class to
one mechanism (and sampler) class.

Modelled on ``dp_accounting``'s events (immutable descriptions that accountants consume) and its
``supports()``; a mechanism is registered once, by its own module (:func:`register`), under its name and the
``dp_accounting`` event classes it reads: that is the only registry of mechanisms in reconrisk.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError
from ..results import Support

#: The neighbouring relations: add or remove one example (Poisson sampling), replace one example by another
#: (fixed-size batches drawn without replacement, randomized response).
RELATIONS = ("add_remove", "replace_one")
#: The two orientations of a pair of neighbouring runs, read as (P, Q): "remove" (the target is in P) and "add".
DIRECTIONS = ("remove", "add")


class Sampler(abc.ABC):
    """How a step chooses the examples it uses (subclasses are frozen dataclasses, validated on construction).

    ``relation`` is the neighbouring relation its amplification theorem is stated for (``None`` where the
    sampler amplifies nothing and so joins either); ``rate`` the probability a given example takes part in a
    step (1 without amplification).
    """

    name: ClassVar[str] = ""

    @property
    @abc.abstractmethod
    def relation(self) -> str | None: ...

    @property
    @abc.abstractmethod
    def rate(self) -> float: ...

    def describe(self) -> str:
        return self.name


class Mechanism(abc.ABC):
    """One noise mechanism (subclasses are frozen dataclasses, validated on construction).

    Subclasses set ``name`` (the registry key) and ``event_types`` (the ``dp_accounting`` event class names they
    read, 1:1), and implement what they know; what they do not know keeps the default: no PLD (``None``: the
    analysis answers from the RDP curve, and says so), an RDP curve of +inf, pure ε of +inf, no μ-GDP.
    """

    name: ClassVar[str] = ""
    event_types: ClassVar[tuple[str, ...]] = ()
    #: The name of the one number a :class:`~reconrisk._src.release.Segment` holds for a DP-SGD release with this noise
    #: (``"noise_multiplier"``, ``"concentration"``), ``None`` for a mechanism a release cannot have.
    level_name: ClassVar[str | None] = None
    #: The JAX noise function of the simulator (:func:`attach_simulator`), ``None`` until one is attached.
    simulator: ClassVar = None

    def supports(self, sampler: Sampler) -> Support:
        """Whether a step of this mechanism under ``sampler`` is analysed here; the one-line reason where not."""
        return Support(True)

    def require(self, sampler: Sampler) -> None:
        s = self.supports(sampler)
        if not s:
            raise ReconRiskError(s.reason)

    def relation(self, sampler: Sampler) -> str | None:
        """The neighbouring relation a step under ``sampler`` is analysed for (``None``: either)."""
        return sampler.relation

    def has_pld(self, sampler: Sampler) -> bool:
        """Whether :meth:`pld` builds a distribution (a subclass that overrides it does), asked without building one."""
        return type(self).pld is not Mechanism.pld

    def pld(self, sampler: Sampler, h: float, *, pessimistic: bool, direction: str):
        """The step's privacy-loss distribution on the grid ``h`` (a :class:`~reconrisk._src.accounting.pmf.PMF`),
        rounded up (``pessimistic``) or down, for ``direction`` ∈ :data:`DIRECTIONS`; ``None`` where none is built."""
        return None

    def rdp(self, sampler: Sampler, orders: np.ndarray) -> np.ndarray:
        """The step's RDP curve at ``orders`` > 1 bounding both directions of its relation (+inf where unknown)."""
        return np.full(np.asarray(orders, dtype=float).size, np.inf)

    def pure_epsilon(self, sampler: Sampler) -> float:
        """The step's pure ε (both directions), +inf where it has none."""
        return math.inf

    def gdp_mu(self, sampler: Sampler) -> float | None:
        """The smallest μ for which the step is μ-GDP, ``None`` where no bound is known here."""
        return None

    def to_dp_event(self, sampler: Sampler):
        """The ``dp_accounting`` event of one step (raises where dp_accounting has none)."""
        raise ReconRiskError(f"{self.name} under {sampler.describe()} has no dp_accounting event")

    @classmethod
    def from_dp_event(cls, event, read) -> list["Step"]:
        """The steps of ``event`` (an instance of one of ``event_types``); ``read(inner_event)`` reads nested
        events (the traversal itself)."""
        raise NotImplementedError  # pragma: no cover - every registered class reads its events

    def label(self, sampler: Sampler) -> str:
        return f"{self.name} ({sampler.describe()})"

    def event_label(self, sampler: Sampler) -> str:
        """The step in a few words for a table title (subclasses name their parameters)."""
        return self.label(sampler)


@dataclass(frozen=True)
class Step:
    """``count`` identical steps of ``mechanism`` under ``sampler`` (a leaf of a run's composition)."""

    mechanism: Mechanism
    sampler: Sampler
    count: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, Mechanism):
            raise ReconRiskError(f"mechanism must be a reconrisk Mechanism; found {type(self.mechanism).__name__}")
        if not isinstance(self.sampler, Sampler):
            raise ReconRiskError(f"sampler must be a reconrisk Sampler; found {type(self.sampler).__name__}")
        object.__setattr__(self, "count", v.integer("count", self.count, minimum=0, maximum=v.MAX_STEPS))
        self.mechanism.require(self.sampler)

    @property
    def relation(self) -> str | None:
        return self.mechanism.relation(self.sampler)

    @property
    def never_sampled(self) -> bool:
        """The target is never used (sampling rate 0): both runs see the same output, the step changes nothing."""
        return self.sampler.rate == 0.0 or self.count == 0

    def pld(self, h: float, *, pessimistic: bool, direction: str):
        return self.mechanism.pld(self.sampler, h, pessimistic=pessimistic, direction=direction)

    def rdp(self, orders) -> np.ndarray:
        if self.never_sampled:
            return np.zeros(np.asarray(orders, dtype=float).size)
        return self.count * np.asarray(self.mechanism.rdp(self.sampler, orders), dtype=float)

    def pure_epsilon(self) -> float:
        e = 0.0 if self.never_sampled else self.mechanism.pure_epsilon(self.sampler)
        return 0.0 if e == 0.0 else self.count * e

    def gdp_mu_squared(self) -> float | None:
        mu = 0.0 if self.never_sampled else self.mechanism.gdp_mu(self.sampler)
        return None if mu is None else (0.0 if mu == 0.0 else self.count * mu * mu)

    def label(self) -> str:
        return f"{self.count} × {self.mechanism.label(self.sampler)}"

    @property
    def event_name(self) -> str:
        """The ``dp_accounting`` event the step is, by class name (``PoissonSampledDpEvent(LaplaceDpEvent)``), or
        the mechanism's name where it has none: what a one-line refusal names."""
        m = self.mechanism.event_types[0] if self.mechanism.event_types else self.mechanism.name
        wrap = getattr(self.sampler, "event_types", ())
        return f"{wrap[0]}({m})" if wrap else m


# ---------------------------------------------------------------------------------------------------------------
# The one registry: name → class, dp_accounting event class name → class.

_BY_NAME: dict[str, type] = {}
_BY_EVENT: dict[str, type] = {}


def register(cls: type) -> type:
    """Register a :class:`Mechanism` or :class:`Sampler` class under its ``name`` (and a mechanism under its
    ``event_types``). Used as a class decorator by the class's own module."""
    if not (isinstance(cls, type) and issubclass(cls, (Mechanism, Sampler)) and cls.name):
        raise ReconRiskError(f"register takes a named Mechanism or Sampler class; found {cls!r}")
    if cls.name in _BY_NAME and _BY_NAME[cls.name] is not cls:
        raise ReconRiskError(f"a mechanism or sampler named {cls.name!r} is already registered")
    _BY_NAME[cls.name] = cls
    for e in getattr(cls, "event_types", ()):
        _BY_EVENT[e] = cls
    return cls


def by_name(name: str) -> type:
    """The registered class called ``name`` (one line naming the known ones where none is)."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise ReconRiskError(f"unknown mechanism or sampler {name!r}; known: {', '.join(sorted(_BY_NAME))}") from None


def for_event(event_class_name: str) -> type | None:
    """The mechanism class reading ``dp_accounting`` events of that class name, ``None`` where none does."""
    return _BY_EVENT.get(event_class_name)


def attach_simulator(mechanism: type, fn) -> None:
    """Make ``fn(key, summed, scale)`` the JAX noise function of ``mechanism`` (a registered :class:`Mechanism`
    class): what the train room's simulator adds for a release of that family. Kept on the class itself
    (``mechanism.simulator``), so the registry stays the only table of mechanisms."""
    if not (isinstance(mechanism, type) and issubclass(mechanism, Mechanism) and _BY_NAME.get(mechanism.name) is mechanism):
        raise ReconRiskError(f"attach_simulator takes a registered Mechanism class; found {mechanism!r}")
    if not callable(fn):
        raise ReconRiskError(f"the simulator of {mechanism.name!r} must be callable; found {fn!r}")
    mechanism.simulator = staticmethod(fn)


def simulator(name: str):
    """The JAX noise function attached to the mechanism called ``name`` (one line naming those that have one)."""
    cls = _BY_NAME.get(name) if isinstance(name, str) else None
    fn = getattr(cls, "simulator", None) if cls is not None and issubclass(cls, Mechanism) else None
    if fn is None:
        have = sorted(n for n, c in _BY_NAME.items() if getattr(c, "simulator", None) is not None)
        raise ReconRiskError(f"noise must be one of {', '.join(map(repr, have))} for the simulator; found {name!r}")
    return fn


def registered(kind: type = object) -> dict[str, type]:
    """The registry's classes (of ``kind``: :class:`Mechanism` or :class:`Sampler`), by name."""
    return {k: c for k, c in sorted(_BY_NAME.items()) if issubclass(c, kind)}
