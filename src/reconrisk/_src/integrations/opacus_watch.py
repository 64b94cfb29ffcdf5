"""Watching a non-Poisson data loader: the batches each of its iterations delivers (:class:`LoaderWatch`).

Opacus's history records one step per optimiser step, at q = 1/len(loader), whatever the loop did with the
loader; a loop that breaks out of it or restarts it mid-epoch (``next(iter(loader))`` every step) starts a
fresh pass of the sampler each time, and an example can then sit in a batch of every pass. So
:class:`~reconrisk.integrations.opacus.ReconRiskAccountant` watches the loader it is told: every
``iter(loader)`` is an iteration, every batch it hands the user's loop is counted, and each optimiser step is
matched to the batches delivered since the previous one (none: the step drew no batch of its own, and
nothing is certified). ``iterations[i]`` is then the batches iteration i had delivered at the last step
matched to it, and K = Σ_i ``plan.per_epoch(iterations[i])``
(:class:`~reconrisk._src.adapters.opacus_loaders.LoaderRun`).

What the user's loop and Opacus iterate is the ``DataLoader`` object itself (``make_private(poisson_sampling=
False)`` returns the loader it was given, or, in secure mode, a new one: the object read from ``make_private``
is the one returned). ``for b in loader`` looks ``__iter__`` up on the type, so setting it on the instance
would not be seen: the instance's class is swapped for a subclass whose ``__iter__`` wraps torch's iterator
in a counting one (its ``__next__`` counts, everything else is the wrapped iterator's); a copy or a pickle of
the loader is the user's class again, unwatched (steps drawn from it are not matched). Neither torch nor Opacus
is imported.

What cannot be seen: a step whose gradient is not one delivered batch (batches concatenated by hand, a batch
kept and reused); Opacus's own gradient accumulation is seen (the sample rate it records is k/len(loader),
refused), and so is a step without any new batch.
"""

from __future__ import annotations

import weakref

__all__ = ["LoaderWatch", "watched"]

_SUBCLASSES: dict[type, type] = {}
_WATCHES = "_reconrisk_watches"  # the instance attribute holding the watches (DataLoader allows new attributes)


class LoaderWatch:
    """The batches each iteration of one data loader delivered, and which of them the steps drew.

    ``delivered[i]``: batches iteration i handed out; ``counts[i]``: batches it had handed out at the last
    step matched to it (0: none). :meth:`match_step` is called at every optimiser step.
    """

    def __init__(self, loader) -> None:
        self.delivered: list[int] = []
        self.counts: list[int] = []
        self._total = 0  # batches delivered so far
        self._at_step = 0  # batches delivered when the last step was matched
        self._since: set[int] = set()  # iterations that delivered since the last step
        self.stale: str | None = None  # why the counts no longer describe the run
        self._loader = weakref.ref(loader)
        watched(loader).__dict__.setdefault(_WATCHES, []).append(self)

    def watches(self, loader) -> bool:
        """Whether this watch counts ``loader`` (the same object)."""
        return self._loader() is loader

    def detach(self) -> None:
        """Stop counting (the loader keeps its class; a loader without watches counts nothing)."""
        loader = self._loader()
        if loader is not None and self in loader.__dict__.get(_WATCHES, ()):
            loader.__dict__[_WATCHES].remove(self)

    def _start(self) -> int:
        self.delivered.append(0)
        self.counts.append(0)
        return len(self.delivered) - 1

    def _deliver(self, i: int) -> None:
        self.delivered[i] += 1
        self._total += 1
        self._since.add(i)

    def match_step(self) -> bool:
        """Match one optimiser step to the batches delivered since the previous one: False when there are none
        (the step drew no batch of its own). Every such batch counts (one skipped or used for evaluation in
        between is counted too: an upper bound)."""
        if self._total == self._at_step:
            return False
        self._at_step = self._total
        for i in self._since:
            self.counts[i] = self.delivered[i]
        self._since.clear()
        return True

    def forget(self) -> None:
        """Drop the counts (a saved state replaced the history); the next step must draw a new batch."""
        self.counts = [0] * len(self.delivered)
        self._at_step, self._since = self._total, set()

    @property
    def iterations(self) -> list[int]:
        """The batches each iteration a step drew from had delivered at its last step (iterations without one
        are left out)."""
        return [k for k in self.counts if k > 0]


class _Counting:
    """torch's loader iterator, its batches counted for the watches (any other attribute is the iterator's)."""

    def __init__(self, loader, it, marks) -> None:
        self._loader, self._it, self._marks = loader, it, marks
        # persistent workers: iter(loader) resets and returns the same torch iterator; an older wrapper still
        # drawing from it would draw the new pass's batches
        self._shared = bool(getattr(loader, "persistent_workers", False)) and (getattr(loader, "num_workers", 0) or 0) > 0

    def __iter__(self):
        return self

    def __next__(self):
        batch = next(self._it)
        latest = self._loader.__dict__.get("_reconrisk_latest")
        for watch, i in self._marks:
            if self._shared and latest is not None and latest() is not self:
                watch.stale = ("an iterator of a loader with persistent workers was used after the loader was "
                               "iterated again (both draw from one pass): its batches cannot be matched")
            watch._deliver(i)
        return batch

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        return getattr(self._it, name)


def _rebuild(cls, state):
    """A watched loader's copy: the user's class, its attributes without the watches."""
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def watched(loader):
    """``loader``, its class swapped (once) for a subclass that counts the batches each iteration delivers."""
    cls = type(loader)
    if cls in _SUBCLASSES.values():
        return loader
    sub = _SUBCLASSES.get(cls)
    if sub is None:
        def __iter__(self, _base=cls):
            it = _base.__iter__(self)
            wraps = [(w, w._start()) for w in self.__dict__.get(_WATCHES, ())]
            if not wraps:
                return it
            out = _Counting(self, it, wraps)
            self.__dict__["_reconrisk_latest"] = weakref.ref(out)
            return out

        def __reduce_ex__(self, protocol, _base=cls):  # a copy or a pickle is the user's class, unwatched
            state = {k: x for k, x in self.__dict__.items() if k not in (_WATCHES, "_reconrisk_latest")}
            return _rebuild, (_base, state)

        sub = type(cls.__name__, (cls,), {"__iter__": __iter__, "__reduce_ex__": __reduce_ex__, "__module__": __name__,
                                          "__doc__": f"{cls.__name__}, its batches counted by reconrisk"})
        _SUBCLASSES[cls] = sub
    loader.__class__ = sub
    return loader
