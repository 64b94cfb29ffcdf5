"""Reconstruction numbers for Flower's local DP (``LocalDpMod``, Gaussian): the analytic attack's law, and ReRo.

With ``LocalDpMod(clipping_norm=C, sensitivity=Δ, epsilon=ε, delta=δ)`` every participating
client sends ``θ + clip_C(update) + N(0, s²I)`` with ``s = Δ·√(2 ln(1.25/δ))/ε`` (the classic
Gaussian mechanism's scale, as ``LocalDpMod`` computes it). The honest-but-curious server knows
θ, so it sees the clipped update of every participant through Gaussian noise of
**noise multiplier** ``σ = s / C`` relative to the clipping norm. That is the setting of
Riess et al. 2024's analytic gradient inversion (reconrisk's ``analytic`` family): the server's
optimal unbiased reconstruction of the clipped update (its dimension N = the number of model
parameters) is ``X̂ ~ N(X, σ²C²·I_N)``, and

* :func:`local_dp_bounds` gives, per round, the analytic (unbiased) attack's error law: its expected
  MSE ``σ²C²``, γ(η) = P(MSE ≤ η) (Prop. 3, Eq. 24) and γ̃(η) = P(PSNR ≥ η) (Props. 4–5,
  Eqs. 25–27) for a secret of norm ≥ C (the clip-norm variant);
* over the k rounds a client took part in, the same law for a secret carried by each of its k
  updates (the average of k matched reconstructions, Prop. 7) and the client's ReRo at a prior of
  ``prior_size`` records (Hayes, Mahloujifar & Balle 2023, Cor. 4) for k Gaussian releases — local
  DP protects any two inputs, i.e. ``Release(σ, 1, k, sampler="fixed")``, whose ReRo is read against
  the zero-out reference (the client's clipped update replaced by 0: sensitivity C, Φ(Φ⁻¹(κ) + √k/σ),
  :mod:`reconrisk._src.measures.rero_zeroout`);
* :class:`LocalDpRiskMetrics` wraps a Flower strategy and writes those numbers into each round's
  train metrics (``ldp_…``), counting every node's participations from the replies.

What each number is. The MSE and PSNR numbers are **the analytic (unbiased) attack's error law** —
exact for that attack, attack-specific, not a bound on every reconstruction: Riess et al. state
them for every attack, which holds among unbiased reconstructions only; an estimator that uses the
public clip norm (guess zero, or project the noisy update onto the C-sphere) reaches an MSE the
law calls all but impossible, on every update (``tests/test_flower_local.py``). The
attack-independent statement about a client's update is the ReRo with a prior (``rero``):
certified for the setting fixed before training (σ, the rounds, the prior). Nothing here is
estimated from the updates.
"""

from __future__ import annotations

import math
from collections import Counter

from flwr.app import MetricRecord
from flwr.clientapp.mod import LocalDpMod
from flwr.serverapp.strategy import Strategy

from .. import _validate as v
from ..analysis.privacy import PrivacyAnalysis
from ..theory.analytic import rero_mse, rero_psnr
from ..theory.analytic_laws import MSELaw, PSNRLaw
from ..errors import ReconRiskError
from ..release import Release

__all__ = ["local_noise_multiplier", "local_dp_bounds", "LocalDpRiskMetrics"]


def local_noise_multiplier(mod: LocalDpMod) -> float:
    """σ = s / C of a ``LocalDpMod``: its noise std ``sensitivity·√(2 ln(1.25/δ))/ε`` over its clipping norm."""
    if not isinstance(mod, LocalDpMod):
        raise ReconRiskError(f"mod must be a flwr.clientapp.mod.LocalDpMod; found {type(mod).__name__}")
    c = v.positive("mod.clipping_norm", mod.clipping_norm)
    sens = v.positive("mod.sensitivity", mod.sensitivity)
    eps = v.positive("mod.epsilon", mod.epsilon)
    delta = v.probability_open("mod.delta", mod.delta)
    return sens * math.sqrt(2.0 * math.log(1.25 / delta)) / eps / c


def local_dp_bounds(mod: LocalDpMod, dim: int, *, rounds: int = 1, eta_mse: float | None = None,
                    eta_psnr: float | None = None, data_range: float = 1.0, prior_size: int | None = None) -> dict:
    """The reconstruction numbers of one client's updates under ``mod`` (module docstring): the analytic
    (unbiased) attack's error law, and with ``prior_size`` the client's certified ReRo.

    ``dim``: the update's dimension N (number of model parameters). ``rounds``: the rounds k the client
    took part in. ``eta_mse`` (default: the per-round expected MSE σ²C²) and ``eta_psnr`` (dB, default
    the per-round expected PSNR at ``data_range``) are the success thresholds. Returns a dict of floats:
    ``noise_multiplier`` σ, ``expected_mse``, ``expected_psnr``, ``mse_rero`` γ(η_mse) and ``psnr_rero``
    γ̃(η_psnr) for one round, ``mse_rero_rounds``/``psnr_rero_rounds`` for a secret in all k updates
    (Prop. 7), and with ``prior_size`` the client's ``rero`` (upper end of the certified bracket).
    """
    sigma = local_noise_multiplier(mod)
    c = float(mod.clipping_norm)
    n = v.integer("dim", dim, minimum=1)
    k = v.integer("rounds", rounds, minimum=1)
    r = v.positive("data_range", data_range)
    var = sigma * sigma * c * c
    mse_law, psnr_law = MSELaw(var, n), PSNRLaw(var, n, r)
    e_mse = float(mse_law.mean()) if eta_mse is None else float(v.real("eta_mse", eta_mse))
    e_psnr = float(psnr_law.mean()) if eta_psnr is None else float(v.real("eta_psnr", eta_psnr))
    out = {
        "noise_multiplier": sigma, "dim": n, "rounds": k, "eta_mse": e_mse, "eta_psnr": e_psnr,
        "expected_mse": float(mse_law.mean()), "expected_psnr": float(psnr_law.mean()),
        "mse_rero": float(rero_mse(e_mse, sigma, n, clip_norm=c)),
        "psnr_rero": float(rero_psnr(e_psnr, sigma, n, clip_norm=c, data_range=r)),
        "mse_rero_rounds": float(rero_mse(e_mse, sigma, n, clip_norm=c, averaged=k)),
        "psnr_rero_rounds": float(rero_psnr(e_psnr, sigma, n, clip_norm=c, data_range=r, averaged=k)),
    }
    if prior_size is not None:
        p = v.integer("prior_size", prior_size, minimum=1)
        out["rero"] = float(_client_rero(sigma, k, p))
    return out


def _client_rero(sigma: float, rounds: int, prior_size: int) -> float:
    return PrivacyAnalysis(Release(sigma, 1.0, rounds, sampler="fixed")).rero(prior_size=prior_size).upper


class LocalDpRiskMetrics(Strategy):
    """A Flower strategy that adds the local-DP reconstruction numbers of ``mod`` to each round's train metrics
    (the analytic attack's error law; with ``prior_size`` the certified ReRo).

    ``strategy``: the strategy to wrap (e.g. ``FedAvg``); ``mod``: the ``LocalDpMod`` the clients use;
    ``dim``, thresholds and ``prior_size`` as :func:`local_dp_bounds`. Metrics added each round:
    ``ldp_noise_multiplier``, ``ldp_expected_mse``, ``ldp_mse_rero``, ``ldp_psnr_rero`` (one update),
    ``ldp_max_rounds`` (most participations of any client so far) with ``ldp_mse_rero_rounds``,
    ``ldp_psnr_rero_rounds`` and, with ``prior_size``, ``ldp_rero`` for that client.
    :attr:`participations` counts each node's rounds (from the replies' ``src_node_id``).
    """

    def __init__(self, strategy: Strategy, mod: LocalDpMod, dim: int, *, eta_mse: float | None = None,
                 eta_psnr: float | None = None, data_range: float = 1.0, prior_size: int | None = None) -> None:
        super().__init__()
        if not isinstance(strategy, Strategy):
            raise ReconRiskError(f"strategy must be a flwr.serverapp.strategy.Strategy; found {type(strategy).__name__}")
        self.strategy = strategy
        self._args = dict(mod=mod, dim=dim, eta_mse=eta_mse, eta_psnr=eta_psnr, data_range=data_range,
                          prior_size=prior_size)
        local_dp_bounds(**self._args)  # validate now, not at the end of the first round
        self.participations: Counter = Counter()
        self._cache: dict[int, dict] = {}

    def __repr__(self) -> str:
        return f"LocalDpRiskMetrics({self.strategy!r})"

    def bounds(self, rounds: int) -> dict:
        """:func:`local_dp_bounds` for a client with ``rounds`` participations (cached)."""
        if rounds not in self._cache:
            self._cache[rounds] = local_dp_bounds(**self._args, rounds=rounds)
        return self._cache[rounds]

    def configure_train(self, server_round, arrays, config, grid):
        return self.strategy.configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        for reply in replies:
            if not reply.has_error():
                self.participations[reply.metadata.src_node_id] += 1
        arrays, metrics = self.strategy.aggregate_train(server_round, replies)
        if not self.participations:
            return arrays, metrics
        one = self.bounds(1)
        k = max(self.participations.values())
        most = self.bounds(k)
        out = dict(metrics or {})
        out.update(ldp_noise_multiplier=one["noise_multiplier"], ldp_expected_mse=one["expected_mse"],
                   ldp_mse_rero=one["mse_rero"], ldp_psnr_rero=one["psnr_rero"], ldp_max_rounds=k,
                   ldp_mse_rero_rounds=most["mse_rero_rounds"], ldp_psnr_rero_rounds=most["psnr_rero_rounds"])
        if "rero" in most:
            out["ldp_rero"] = most["rero"]
        return arrays, MetricRecord(out)

    def configure_evaluate(self, server_round, arrays, config, grid):
        return self.strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round, replies):
        return self.strategy.aggregate_evaluate(server_round, replies)

    def summary(self) -> None:
        self.strategy.summary()
