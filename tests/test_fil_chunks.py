"""The FIL hook's row chunking (train/fil.py FILHook): chunks evaluated side by side before and inside its loop.

The per-example FIL must not depend on how the padded Poisson gather is cut into chunks: the same rows with
the same keys. Compared here between the default (ceil(q·n / ROW_CHUNK) chunks side by side, then
LOOP_CHUNKS per iteration) and two other cuttings, on batches large enough that the loop runs in some steps.

The hook is driven directly rather than through the trainer, with the trainer's own batches (``sample_batch``
with the trainer's static step configuration: the padded gather) and a new θ every step: the chunking is the
hook's alone, and that the trainer feeds the hook θ_t and the batch of step t is tests/test_fil_dpsgd.py's
replay. Compilation: the three cuttings are traced into one program (one hook step each, side by side), which
compiles in about half the time of three programs — most of a program's compile time is not the FIL chunks
(measured: ~4 s per program and ~0.5 s per chunk of rows, 13 chunks in all).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from reconrisk import Release  # noqa: E402
from reconrisk._src.data import load_digits  # noqa: E402
from reconrisk._src.train import dpsgd, models  # noqa: E402
from reconrisk._src.train import fil as F  # noqa: E402
from reconrisk._src.train.sampling import sample_batch  # noqa: E402

N, RELEASE = 300, Release(1.1, 0.2, 6, clip_norm=0.8)
CUTTINGS = ((None, None), (1, 1), (2, 3))  # (lead chunks, chunks per loop iteration); None: the defaults


def _fil(monkeypatch):
    """{cutting: per-example FIL summed over the 6 steps}, batch sizes."""
    d = load_digits()
    model = models.get_model("mlp:5", d.image_shape)
    x, y = jnp.asarray(d.x[:N]), jnp.asarray(d.y[:N])
    cfg = dpsgd.make_step_config(RELEASE, N, 0.2, "gelu")
    assert cfg.cap is not None  # the padded gather, which the hook cuts into chunks
    default_lead, default_loop = F.lead_chunks(N, RELEASE.sample_rate), F.LOOP_CHUNKS
    params = model.init(jax.random.PRNGKey(1))
    k_run, k_fil = jax.random.split(jax.random.PRNGKey(3))
    s = jnp.float32(RELEASE.noise_std)

    @jax.jit
    def step(accs, t):
        k_batch, k_noise = dpsgd.step_keys(k_run, t)
        batch = sample_batch(k_batch, N, cfg)
        p = jax.tree_util.tree_map(lambda w: w * (1.0 + 0.1 * t), params)  # θ_t: other parameters every step
        info = dpsgd.StepInfo(t, p, None, None, batch, k_batch, k_noise, x, y, s)
        out = []
        for (lead, loop), acc in zip(CUTTINGS, accs):
            hook = F.FILHook(model, "trace_sampled", 7, F.DEFAULT_POWER_ITERS, "gelu", RELEASE.clip_norm,
                             default_lead if lead is None else lead)
            with monkeypatch.context() as m:
                m.setattr(F, "LOOP_CHUNKS", default_loop if loop is None else loop)  # read by the hook's trace
                (acc, *_), _ = hook.step((acc, jnp.float32(1.0), s, k_fil), info)
            out.append(acc)
        return tuple(out), jnp.sum(batch.member)

    accs, sizes = tuple(jnp.zeros((N,), jnp.float32) for _ in CUTTINGS), []
    for t in range(RELEASE.steps):
        accs, size = step(accs, t)
        sizes.append(int(size))
    return dict(zip(CUTTINGS, (np.asarray(a) for a in accs))), sizes


def test_fil_does_not_depend_on_the_chunking(monkeypatch):
    assert F.lead_chunks(N, 0.2) == 4  # 64 rows first; ~60 ± 7 members, so some steps need the loop
    fil, sizes = _fil(monkeypatch)
    assert max(sizes) > 4 * F.ROW_CHUNK  # the loop ran in some steps (the keys are fixed: checked, not hoped)
    default = fil[None, None]
    assert (default > 0).sum() > 150
    for cutting in CUTTINGS[1:]:
        np.testing.assert_allclose(fil[cutting], default, rtol=1e-6, atol=0, err_msg=str(cutting))


def test_lead_chunks_rule():
    assert F.lead_chunks(1347, 0.05) == 5  # the digits benchmark: q·n = 67.35 → 5 chunks of 16
    assert F.lead_chunks(100, 0.01) == 1
    assert F.lead_chunks(60000, 0.01) == F.MAX_LEAD_CHUNKS
