"""The accountant's doors, answered by the one composition cache: :func:`shared_analysis` and :func:`epsilon`.

Every door that asks about a :class:`~reconrisk._src.release.Release` by its numbers — ``reconrisk.epsilon``,
``noise_multiplier_for_epsilon``, :func:`reconrisk.analyse` — reads the release's
:class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` from :func:`shared_analysis`, a bounded LRU of analyses
keyed by the release (a frozen, hashable value: two equal releases are one key). So
``reconrisk.epsilon(σ, q, T, δ)`` asked twice composes once, and a question asked through another door finds
the distributions the first one composed: ``PrivacyAnalysis.pmf`` stays the one place that composes.

The cache holds at most :data:`SHARED_ANALYSES` analyses (least recently used dropped first): each may hold
composed distributions of up to a few million atoms, so the bound keeps memory in tens of megabytes, not in
the number of releases a calibration search visits.
"""

from __future__ import annotations

from functools import lru_cache

from .. import _validate as v
from ..accounting.epsilon import ACCOUNTANTS, _dp_accounting_epsilon, _release, _rdp_epsilon
from ..errors import ReconRiskError
from ..release import Release
from .privacy import PrivacyAnalysis

#: How many analyses :func:`shared_analysis` keeps (least recently used dropped first).
SHARED_ANALYSES = 8


@lru_cache(maxsize=SHARED_ANALYSES)
def _cached(release: Release) -> PrivacyAnalysis:
    return PrivacyAnalysis(release)


def shared_analysis(release: Release) -> PrivacyAnalysis:
    """The :class:`~reconrisk._src.analysis.privacy.PrivacyAnalysis` of ``release``, shared by every door that asks
    about it (an LRU of :data:`SHARED_ANALYSES` entries keyed by the release; its ``compositions`` count every
    composition any door caused). A release that is refused (not Gaussian, not a release) is refused in one line
    (:class:`~reconrisk.errors.ReconRiskError`), and nothing is kept."""
    if not isinstance(release, Release):
        return PrivacyAnalysis(release)  # (refused there, by name)
    return _cached(release)


#: The LRU's statistics (``hits``, ``misses``, ``maxsize``, ``currsize``) and its reset.
shared_analysis.cache_info = _cached.cache_info
shared_analysis.cache_clear = _cached.cache_clear


def epsilon(
    noise_multiplier: float | None = None,
    sample_rate: float = 1.0,
    steps: int = 1,
    delta: float = 1e-5,
    accountant: str = "pld",
    *,
    release: Release | None = None,
) -> float:
    """ε of DP-SGD at ``delta`` (add/remove adjacency, Poisson sampling), as a float: the accountant's number.

    Give ``noise_multiplier, sample_rate, steps`` or a ``release`` (which may be
    a heterogeneous schedule).

    This is the one public function that answers a certified number with a plain float, by design: it is the
    drop-in for an accountant's ``get_epsilon(delta)`` (Opacus, ``dp_accounting``), whose callers compare and
    format it as a number. It is the upper end of the certified bracket: with ``accountant="pld"``,
    ``epsilon(release=r, delta=d) == PrivacyAnalysis(r).epsilon(d).upper`` to the last bit — read from the
    release's shared analysis (:func:`shared_analysis`), so asking twice composes once; that
    :class:`~reconrisk._src.results.Bound` (lower end, method, formula) is the result to keep where the number is
    reported. ``accountant="rdp"``: the RDP conversion (:mod:`reconrisk._src.accounting.epsilon`);
    ``"dp_accounting"``: Google's ``PLDAccountant`` itself.
    """
    rel = _release(noise_multiplier, sample_rate, steps, release)
    delta = v.probability_open("delta", delta)
    accountant = v.choice("accountant", accountant, ACCOUNTANTS)
    # fixed-size batches (replace-one): ε is a statement about pairs, whose orientation may change from step
    # to step; the analysis's pair view composes the symmetrised per-step curve (Dong, Roth & Su 2022, Thm 4.2).
    # The RDP accountant uses the without-replacement RDP bound (Wang, Balle & Kasiviswanathan 2019), a theorem
    # for replace-one pairs in either orientation, composed adaptively.
    if accountant == "pld":
        return shared_analysis(rel.as_run).epsilon(delta).upper
    if accountant == "rdp":
        return _rdp_epsilon(rel, delta)
    if rel.as_run.sampler == "fixed":
        raise ReconRiskError("accountant='dp_accounting' has no privacy-loss distribution for fixed-size batches "
                             "(sampling without replacement, replace-one); use accountant='pld' or 'rdp'")
    return _dp_accounting_epsilon(rel, delta)
