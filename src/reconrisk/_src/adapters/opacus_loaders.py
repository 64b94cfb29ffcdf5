"""How often a non-Poisson PyTorch data loader can show one example to DP-SGD: :class:`LoaderPlan`.

Opacus records ``q = 1/len(loader)`` per step whatever the loader draws, so its history cannot say how many
times an example took part. For a loader that is not Poisson (``make_private(poisson_sampling=False)``) the
sound stand-in is ``Release.shuffled(σ, K)`` (K Gaussian steps of replace-one sensitivity 2C), and K must be
read from the loader itself. Given the sequence of indices the sampler yields (revealing it only helps the
adversary), replace-one neighbours differ at one index i; a step whose batch holds i ``m`` times moves the
clipped sum by at most ``2mC``, every other step is the same function of the outputs so far, so the run is
the adaptive composition of Gaussian mechanisms of sensitivities ``2 m_t C`` at noise ``σC``: exactly
``μ = (2/σ)·√(Σ_t m_t²)``-GDP, i.e. ``Release.shuffled(σ, K)`` with ``K = Σ_t m_t²`` (Dong, Roth & Su 2022,
Cor. 3.3; the mixture over index sequences is no worse, the trade-off function being convex). The
certificate takes the worst index and the worst sequence the sampler can yield: :meth:`LoaderPlan.passes`
is ``max_i max_seq Σ_t m_t(i)²`` over the steps taken, computed exactly from the sampler's semantics (torch
2.x source):

* ``SequentialSampler``, ``RandomSampler(replacement=False)`` with ``num_samples = m`` over ``n`` examples:
  ``⌊m/n⌋`` permutations and a prefix of one more, concatenated; an example sits once in each (anywhere:
  every permutation is possible), so a batch straddling two permutations can hold it twice;
* ``RandomSampler(replacement=True)``: every draw may be the same example (the worst case is possible), so
  a batch of b draws counts b² — sound, and large: use Poisson sampling;
* ``DistributedSampler(num_replicas=R)``: one permutation (or ``range(n)``) padded to ``total_size`` by
  repeating its head (an example at position p also at p + n, p + 2n, …), or cut to ``total_size`` with
  ``drop_last``; replica r takes positions r, r + R, …, so the step that sums every replica's batch b holds
  positions ``[t·b·R, (t+1)·b·R)`` of that list — counted for the whole distributed run, which bounds one
  replica's share too;
* ``SubsetRandomSampler`` with distinct indices: one permutation of them.

A plan holds only what torch's samplers can hold (``num_samples`` as the sampler sets it, ``replacement`` for
``RandomSampler`` alone, …): a saved plan is read back through the same checks. More than ``MAX_PASSES``
permutations per loader epoch are refused rather than counted.

Batches: ``BatchSampler(sampler, batch_size, drop_last)`` (what ``DataLoader(batch_size=…)`` builds); each
iteration of the loader (``iter(loader)``) restarts the sampler: a fresh pass whose first k batches weigh an
example at most ``per_epoch(k)``. The history cannot show where a loop restarted the loader (a ``break``,
``next(iter(loader))`` every step), so the iterations a run actually took are what counts: :class:`LoaderRun`
holds the batches each iteration delivered up to its last step (observed by
:class:`~reconrisk.integrations.opacus.ReconRiskAccountant`), and K = Σ over iterations of ``per_epoch(k_i)``.
Without them (a state saved before iterations were observed, ``Release.from_opacus(..., data_loader=)`` with
Opacus's own accountant) :meth:`LoaderPlan.passes` counts the steps in the loader's order — whole loader
epochs, the last one possibly cut short — and the note says that was assumed. Anything else (another sampler
or batch sampler, an ``IterableDataset``, ``batch_size=None``, ``in_order=False`` with workers) is refused in
one line: nothing can be proved about it.

Neither torch nor Opacus is imported: class names, modules and attributes only.
"""

from __future__ import annotations

import math
import operator
from dataclasses import asdict, dataclass
from functools import lru_cache

from ..errors import ReconRiskError

__all__ = ["LoaderPlan", "LoaderRun", "loader_plan", "MAX_PASSES", "POISSON_SAMPLERS", "worst_blocks"]

#: Opacus's Poisson batch samplers (the history describes their run as it is).
POISSON_SAMPLERS = ("UniformWithReplacementSampler", "DistributedUniformWithReplacementSampler")
_HINT = "use Poisson sampling (make_private(poisson_sampling=True), Opacus's default)"
SAMPLERS = ("SequentialSampler", "RandomSampler", "DistributedSampler", "SubsetRandomSampler")
#: Most permutations one loader epoch may concatenate (the count's work grows with them; ε is vacuous far below).
MAX_PASSES = 100_000


@dataclass(frozen=True)
class LoaderPlan:
    """What a non-Poisson loader can do with one example in one loader epoch (read by :func:`loader_plan`).

    ``sampler``: the torch sampler's class; ``n``: the examples it permutes (or draws from); ``num_samples``:
    indices one replica's loader epoch yields; ``replacement``: drawn with replacement; ``batch_size`` and
    ``drop_last``: the ``BatchSampler``'s; ``num_replicas``: ``DistributedSampler``'s R (1 otherwise);
    ``total_size``: the list the replicas share (``num_samples · R``).
    """

    sampler: str
    n: int
    num_samples: int
    batch_size: int
    drop_last: bool = False
    replacement: bool = False
    num_replicas: int = 1

    def __post_init__(self):
        for name in ("n", "num_samples", "batch_size", "num_replicas"):
            x = getattr(self, name)
            if not isinstance(x, int) or isinstance(x, bool) or x < 1:
                raise ReconRiskError(f"loader {name} must be an integer >= 1; found {x!r}")
        if self.sampler not in SAMPLERS:
            raise ReconRiskError(f"loader sampler must be one of {SAMPLERS}; found {self.sampler!r}")
        for name in ("drop_last", "replacement"):
            if not isinstance(getattr(self, name), bool):
                raise ReconRiskError(f"loader {name} must be True or False; found {getattr(self, name)!r}")
        # what torch's samplers can hold (a saved plan is read back through here: nothing torch cannot build)
        if self.replacement and self.sampler != "RandomSampler":
            raise ReconRiskError(f"loader replacement=True is RandomSampler's only; found sampler {self.sampler!r}")
        if self.num_replicas != 1 and self.sampler != "DistributedSampler":
            raise ReconRiskError(f"loader num_replicas must be 1 for {self.sampler}; found {self.num_replicas}")
        if self.sampler in ("SequentialSampler", "SubsetRandomSampler") and self.num_samples != self.n:
            raise ReconRiskError(f"loader {self.sampler}'s num_samples must be n = {self.n}; found {self.num_samples}")
        n, r = self.n, self.num_replicas
        if self.sampler == "DistributedSampler":  # torch: ⌈n/R⌉, or ⌈(n − R)/R⌉ with drop_last when R ∤ n
            ok = sorted({-(-n // r)} | ({-(-(n - r) // r)} if n % r and n > r else set()))
            if self.num_samples not in ok:
                raise ReconRiskError(f"loader DistributedSampler's num_samples must be one of {ok} for n = {n}, "
                                     f"num_replicas = {r}; found {self.num_samples}")
        perms = -(-self.total_size // n)  # the permutations (or padding copies) one loader epoch concatenates
        if not self.replacement and perms > MAX_PASSES:
            raise ReconRiskError(f"loader num_samples/n must be at most {MAX_PASSES} passes per loader epoch; found "
                                 f"{perms} ({self.describe()}): counting them is not attempted; {_HINT}")

    @property
    def kind(self) -> str:
        """``"sequential"``, ``"shuffled"`` or ``"with_replacement"`` (what the accountant's ``batch_sampling`` says)."""
        if self.replacement:
            return "with_replacement"
        return "sequential" if self.sampler == "SequentialSampler" else "shuffled"

    @property
    def total_size(self) -> int:
        """Indices one loader epoch yields over all replicas (``DistributedSampler``'s ``total_size``)."""
        return self.num_samples * self.num_replicas

    @property
    def batches(self) -> int:
        """Steps per loader epoch (``len(loader)`` on one replica)."""
        full, part = divmod(self.num_samples, self.batch_size)
        return full if self.drop_last else full + (part > 0)

    def per_epoch(self, steps: int | None = None) -> int:
        """max Σ_t m_t² over the first ``steps`` steps of one loader epoch (all of it when None)."""
        s = self.batches if steps is None else min(steps, self.batches)
        return _worst(self, s)

    def passes(self, steps: int) -> int:
        """K for ``steps`` optimisation steps taken in the loader's order: whole loader epochs, then the steps of
        the last one (0 for no step)."""
        if not isinstance(steps, int) or steps < 0:
            raise ReconRiskError(f"steps must be an integer >= 0; found {steps!r}")
        if self.batches == 0:
            return 0
        full, rest = divmod(steps, self.batches)
        return full * self.per_epoch() + (self.per_epoch(rest) if rest else 0)

    def describe(self) -> str:
        """One line naming the sampler and its batches (what the warnings quote)."""
        rep = ", replacement=True" if self.replacement else ""
        dist = f", num_replicas={self.num_replicas}" if self.sampler == "DistributedSampler" else ""
        return (f"{self.sampler}(n={self.n}, num_samples={self.num_samples}{rep}{dist}) in batches of "
                f"{self.batch_size}{' (drop_last)' if self.drop_last else ''}")

    def to_dict(self) -> dict:
        """The fields, for a saved accountant state (:meth:`from_dict` reads it back, validated)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d) -> "LoaderPlan":
        """The plan a :meth:`to_dict` saved; refused in one line when a field is missing, unknown or invalid."""
        if not isinstance(d, dict):
            raise ReconRiskError(f"a saved loader must be a dict of LoaderPlan fields; found {d!r:.80}")
        fields = set(cls.__dataclass_fields__)
        if not set(d) <= fields or not {"sampler", "n", "num_samples", "batch_size"} <= set(d):
            raise ReconRiskError(f"a saved loader must hold the fields {sorted(fields)}; found {sorted(d)}")
        return cls(**d)


@dataclass(frozen=True)
class LoaderRun:
    """The iterations of a non-Poisson loader a run actually took: what K is counted from.

    ``iterations[i]``: the batches iteration i of the loader (one ``iter(loader)``, a fresh pass of its sampler)
    had delivered when the last optimisation step drawn from it was taken (1 ≤ k ≤ ``plan.batches``);
    ``assumed_steps``: steps recorded before the iterations were observed (a state saved by an earlier
    release), counted in the loader's order; ``unmatched``: why the steps could not be matched to delivered
    batches (then nothing is certified). A saved run is read back through the same checks.
    """

    plan: LoaderPlan
    iterations: tuple = ()
    assumed_steps: int = 0
    unmatched: str | None = None

    def __post_init__(self):
        if not isinstance(self.plan, LoaderPlan):
            raise ReconRiskError(f"a loader run's plan must be a LoaderPlan; found {type(self.plan).__name__}")
        if not isinstance(self.iterations, tuple):
            raise ReconRiskError(f"a loader run's iterations must be a tuple; found {type(self.iterations).__name__}")
        hi = self.plan.batches
        for i, k in enumerate(self.iterations):
            if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= hi:
                raise ReconRiskError(f"loader iterations[{i}] must be an integer in [1, {hi}] (the batches one "
                                     f"iteration of {self.plan.describe()} can deliver); found {k!r:.40}")
        a = self.assumed_steps
        if not isinstance(a, int) or isinstance(a, bool) or a < 0:
            raise ReconRiskError(f"loader assumed_steps must be an integer >= 0; found {a!r:.40}")
        u = self.unmatched
        if u is not None and (not isinstance(u, str) or "\n" in u or not 0 < len(u) <= 500):
            raise ReconRiskError(f"loader unmatched must be a reason (one line of at most 500 characters) or None; "
                                 f"found {u!r:.40}")

    @property
    def batches(self) -> int:
        """The steps the run can account for: one delivered batch each (and the assumed steps)."""
        return self.assumed_steps + sum(self.iterations)

    def passes(self, steps: int) -> int:
        """K for the ``steps`` the history records: Σ over iterations of ``plan.per_epoch(k_i)``, plus the
        assumed steps in the loader's order; refused when the steps cannot have been drawn by these batches."""
        if self.unmatched is not None:
            raise ReconRiskError(f"nothing is certified for this run: {self.unmatched}")
        if not isinstance(steps, int) or steps < 0:
            raise ReconRiskError(f"steps must be an integer >= 0; found {steps!r}")
        if not self.assumed_steps <= steps <= self.batches:
            raise ReconRiskError(
                f"the history records {steps} steps but the loader's observed iterations delivered "
                f"{sum(self.iterations)} batches to them (and {self.assumed_steps} steps were recorded before): "
                "steps must be between the two (every step one batch of its own); nothing is certified")
        counts: dict[int, int] = {}
        for k in self.iterations:
            counts[k] = counts.get(k, 0) + 1
        return self.plan.passes(self.assumed_steps) + sum(m * self.plan.per_epoch(k) for k, m in counts.items())

    def to_state(self) -> dict:
        """What a saved accountant state holds besides the plan (:meth:`from_state` reads it back)."""
        out = {"iterations": list(self.iterations), "assumed_steps": self.assumed_steps}
        if self.unmatched is not None:
            out["unmatched"] = self.unmatched
        return out

    @classmethod
    def from_state(cls, plan: LoaderPlan, state) -> "LoaderRun | None":
        """The run a :meth:`to_state` saved in ``state`` (a dict); None when it holds no ``iterations`` (an older
        state: the steps are counted in the loader's order). Refused in one line when malformed."""
        if not isinstance(state, dict) or state.get("iterations") is None:
            return None
        its = state["iterations"]
        if not isinstance(its, (list, tuple)):
            raise ReconRiskError(f"a saved loader's iterations must be a list of integers; found {its!r:.60}")
        return cls(plan, tuple(its), state.get("assumed_steps", 0), state.get("unmatched"))


def worst_blocks(blocks, chunk: int) -> int:
    """max Σ_c (occurrences in chunk c)² when one occurrence sits anywhere in each block ``[start, end)``.

    Chunk c is the positions ``[c·chunk, (c+1)·chunk)``; the blocks are consecutive and disjoint, in order.
    Exact, by dynamic programming over the blocks: the blocks being ordered, the next occurrence can join
    earlier ones only in the chunk where the last block ends, so the state is the count in that chunk (and
    the best total with the last occurrence placed before it).
    """
    closed, open_, hi_prev = 0, {}, -1  # best with the last occurrence before chunk hi_prev / at it, count j
    for start, end in blocks:
        if end <= start:
            continue
        lo, hi = start // chunk, (end - 1) // chunk
        every = max([closed, *open_.values()])
        at_lo = {1: every + 1}
        if lo == hi_prev:  # the previous block's last chunk: join the occurrences there, or come first
            at_lo = {1: closed + 1} if closed >= 0 else {}
            for j, val in open_.items():
                at_lo[j + 1] = max(at_lo.get(j + 1, -1), val + 2 * j + 1)
        if hi == lo:
            closed, open_ = -1, at_lo
        else:
            closed, open_ = max(*at_lo.values(), every + 1), {1: every + 1}
        hi_prev = hi
    return max([closed, *open_.values()])


@lru_cache(maxsize=256)
def _worst(plan: LoaderPlan, steps: int) -> int:
    if steps <= 0:
        return 0
    b, r = plan.batch_size, plan.num_replicas
    counted = min(steps * b, plan.num_samples)  # one replica's positions in the first `steps` batches
    if plan.replacement:  # every draw may be the one example
        full, part = divmod(counted, b)
        return full * b * b + part * part
    if plan.sampler == "DistributedSampler":
        length, chunk, n = counted * r, b * r, plan.n
        if plan.total_size <= n:  # drop_last (or no padding needed): one permutation cut, each example once
            return 1
        worst = 1
        for p in range(min(n, length)):  # example at position p of the permutation: also at p + n, p + 2n, …
            counts: dict[int, int] = {}
            for pos in range(p, length, n):
                counts[pos // chunk] = counts.get(pos // chunk, 0) + 1
            worst = max(worst, sum(c * c for c in counts.values()))
            if p + n >= length:  # the examples after p appear once in the counted part
                break
        return worst
    n = plan.n  # Sequential, Random without replacement, SubsetRandom: permutations of n concatenated
    return worst_blocks([(k * n, min((k + 1) * n, counted)) for k in range(math.ceil(counted / n))], b)


def _is(obj, name: str, module: str) -> bool:
    t = type(obj)
    return t.__name__ == name and t.__module__.startswith(module)


def _int(x, what: str) -> int:
    if not isinstance(x, int) or isinstance(x, bool) or x < 1:
        raise ReconRiskError(f"the data loader's {what} must be an integer >= 1; found {x!r}; {_HINT}")
    return x


def loader_plan(data_loader) -> LoaderPlan | None:
    """The :class:`LoaderPlan` of a PyTorch data loader; None for Opacus's Poisson loader.

    Refused in one line (what to do: Poisson sampling) when its participation cannot be proved: a batch
    sampler other than torch's ``BatchSampler``, a sampler other than the four read here, an
    ``IterableDataset`` or ``batch_size=None``, ``SubsetRandomSampler`` with repeated indices.
    """
    bs = getattr(data_loader, "batch_sampler", None)
    name = type(bs).__name__
    if name in POISSON_SAMPLERS and type(bs).__module__.startswith("opacus."):
        return None
    inner = getattr(bs, "sampler", None)
    inner_name = type(inner).__name__
    if getattr(data_loader, "in_order", True) is False and (getattr(data_loader, "num_workers", 0) or 0) > 0:
        raise ReconRiskError(f"data_loader's in_order=False with num_workers={data_loader.num_workers} delivers "
                             f"batches out of the sampler's order: which batches a step drew is not known; "
                             f"use in_order=True (torch's default), or {_HINT}")
    if not _is(bs, "BatchSampler", "torch.utils.data"):
        why = ("batch_size=None (no batches)" if bs is None else f"batch sampler {name}({inner_name})")
        raise ReconRiskError(f"data_loader must be an Opacus Poisson loader or a DataLoader whose BatchSampler "
                             f"draws from a {', '.join(SAMPLERS)}; found {why}; {_HINT}")
    if not any(_is(inner, s, "torch.utils.data") for s in SAMPLERS):
        raise ReconRiskError(f"data_loader's sampler {inner_name} has no participation reconrisk can prove "
                             f"(known: {', '.join(SAMPLERS)}); found batch sampler {name}({inner_name}); {_HINT}")
    batch = _int(getattr(bs, "batch_size", None), "batch_size")
    drop = bool(getattr(bs, "drop_last", False))
    if inner_name == "DistributedSampler":
        n = _int(len(inner.dataset), "dataset length")
        return LoaderPlan(inner_name, n, _int(inner.num_samples, "num_samples"), batch, drop,
                          num_replicas=_int(inner.num_replicas, "num_replicas"))
    if inner_name == "SubsetRandomSampler":
        try:  # as integers: a tensor's 0-d elements hash by identity, so repeats would pass unseen
            idx = [operator.index(i) for i in inner.indices]
        except TypeError:
            raise ReconRiskError(f"data_loader's SubsetRandomSampler indices must be integers; found "
                                 f"{inner.indices!r:.60}; {_HINT}") from None
        if len(set(idx)) != len(idx):
            raise ReconRiskError(f"data_loader's SubsetRandomSampler repeats indices ({len(idx) - len(set(idx))} "
                                 f"repeats): their participation is not read; {_HINT}")
        n = _int(len(idx), "number of indices")
        return LoaderPlan(inner_name, n, n, batch, drop)
    n = _int(len(inner.data_source), "data source length")
    if inner_name == "SequentialSampler":
        return LoaderPlan(inner_name, n, n, batch, drop)
    return LoaderPlan(inner_name, n, _int(inner.num_samples, "num_samples"), batch, drop,
                      replacement=bool(inner.replacement))
