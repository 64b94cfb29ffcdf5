"""Local DP (Flower's LocalDpMod): Riess et al.'s MSE law is the analytic (unbiased) attack's, not a bound on
every reconstruction.

On real LocalDpMod updates (the digits MLP of test_flower, 12 rounds of all 10 clients), estimators that use
the public clip norm C reach an MSE the law calls all but impossible, every time: guessing zero (MSE ≤ C²/N,
the clipped update has norm ≤ C) and projecting the noisy update onto the C-sphere (MSE ≤ 4C²/N). The analytic
attack itself (noisy model − model sent) stays where its law puts it.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower integration needs flwr (pip install reconrisk[flower])")

from flwr.clientapp.mod import LocalDpMod  # noqa: E402
from flwr.serverapp.strategy import FedAvg  # noqa: E402
from test_flower import DIM, N_CLIENTS, make_client_app, run  # noqa: E402

from reconrisk.integrations.flower_local import LocalDpRiskMetrics, local_dp_bounds  # noqa: E402
from reconrisk._src.theory.analytic import rero_mse  # noqa: E402


def test_a_clip_norm_aware_estimator_beats_the_analytic_law_on_every_update():
    c = 0.5
    mod = LocalDpMod(clipping_norm=c, sensitivity=c, epsilon=20.0, delta=1e-5)
    record, seen = {}, []

    class Server(LocalDpRiskMetrics):
        def aggregate_train(self, server_round, replies):
            replies = list(replies)
            for r in replies:
                a = r.content["arrays"]
                seen.append((r.metadata.src_node_id, server_round,
                             np.concatenate([x.ravel() for x in a.to_numpy_ndarrays()])))
            return super().aggregate_train(server_round, replies)

    inner = FedAvg(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=N_CLIENTS, min_available_nodes=N_CLIENTS)
    run(Server(inner, mod, DIM), rounds=12, client_app=make_client_app([mod], record))
    assert len(seen) == 12 * N_CLIENTS
    eta = 4 * c * c / DIM  # the projection's worst case
    sigma = local_dp_bounds(mod, DIM)["noise_multiplier"]
    log_law = float(rero_mse(eta, sigma, DIM, clip_norm=c, log=True))
    assert log_law < -100  # the law: P(MSE ≤ η) below e^-100
    zero = projected = analytic = 0
    for node, rnd, noisy in seen:
        sent, trained = record[(node, rnd)]
        update = trained - sent
        secret = update * min(1.0, c / np.linalg.norm(update))  # the clipped update the server is after
        y = noisy - sent  # the analytic (unbiased) reconstruction
        zero += np.mean(secret ** 2) <= eta  # ≤ C²/N (up to rounding) < η
        projected += np.mean((c * y / np.linalg.norm(y) - secret) ** 2) <= eta
        analytic += np.mean((y - secret) ** 2) <= eta
    assert zero == projected == len(seen)  # probability 1, where the law says < e^-100
    assert analytic == 0  # the analytic attack obeys its own law
