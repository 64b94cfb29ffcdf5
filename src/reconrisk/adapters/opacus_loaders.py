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
loader epoch restarts the sampler. Steps are counted in the loader's order — whole loader epochs, the last
one possibly cut short (its steps so far, exactly); a loop that restarts the loader mid-epoch
(``next(iter(loader))`` every step) draws fresh batches the history cannot show, and is not covered. Anything else (another sampler or batch sampler, an
``IterableDataset``, ``batch_size=None``) is refused in one line: nothing can be proved about it.

Neither torch nor Opacus is imported: class names, modules and attributes only.
"""

from __future__ import annotations

import math
import operator
from dataclasses import asdict, dataclass
from functools import lru_cache

from ..errors import ReconRiskError

__all__ = ["LoaderPlan", "loader_plan", "MAX_PASSES", "POISSON_SAMPLERS", "worst_blocks"]

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
