"""The FIL hook's row chunking (train/fil.py FILHook): chunks evaluated side by side before and inside its loop.

The per-example FIL must not depend on how the padded Poisson gather is cut into chunks: the same rows with
the same keys. Compared here between the default (ceil(q·n / ROW_CHUNK) chunks side by side, then
LOOP_CHUNKS per iteration) and two other cuttings, on a batch large enough that the loop runs in some steps.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from reconrisk import Release  # noqa: E402
from reconrisk.data import load_digits  # noqa: E402
from reconrisk.train import dpsgd, models  # noqa: E402
from reconrisk.train import fil as F  # noqa: E402


def _fil(monkeypatch, lead, loop):
    d = load_digits()
    model = models.get_model("mlp:5", d.image_shape)
    release = Release(1.1, 0.2, 6, clip_norm=0.8)
    cfg = F.FILConfig(method="trace_sampled", num_coords=7, momentum=0.0, learning_rate=0.2, seed=3)
    with monkeypatch.context() as m:
        if lead is not None:
            m.setattr(F, "lead_chunks", lambda n, q: lead)
        m.setattr(F, "LOOP_CHUNKS", loop)
        dpsgd._chunk_runner.cache_clear()  # the compiled trainer is cached on (model, config, hook)
        try:
            return F.train_dpsgd_with_fil(model, release, d.x[:300], d.y[:300], config=cfg, chunk_steps=6).fil
        finally:
            dpsgd._chunk_runner.cache_clear()


def test_fil_does_not_depend_on_the_chunking(monkeypatch):
    assert F.lead_chunks(300, 0.2) == 4  # 64 rows first; ~60 ± 7 members, so some steps need the loop
    default = _fil(monkeypatch, None, F.LOOP_CHUNKS)
    assert (default > 0).sum() > 150
    for lead, loop in ((1, 1), (2, 3)):
        np.testing.assert_allclose(_fil(monkeypatch, lead, loop), default, rtol=1e-6, atol=0)


def test_lead_chunks_rule():
    assert F.lead_chunks(1347, 0.05) == 5  # the digits benchmark: q·n = 67.35 → 5 chunks of 16
    assert F.lead_chunks(100, 0.01) == 1
    assert F.lead_chunks(60000, 0.01) == F.MAX_LEAD_CHUNKS
