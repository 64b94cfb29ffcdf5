"""Small classifiers whose layers expose activations and back-propagated signals.

Every layer is affine in its parameters: a dense layer maps an input row ``a``
(K features) to ``a W + b``; a convolution is the same map applied at each of
P output positions to the image patch ("im2col") found there, with the kernel
stored directly as a (K = C_in·k·k, C_out) matrix. So for example ``b`` the
gradient of its loss with respect to a layer's weights is

    ∇_W ℓ_b = Σ_p a_{b,p} δ_{b,p}^T,     ∇_b ℓ_b = Σ_p δ_{b,p},

where ``a_{b,p}`` is the layer input ("tap") at position p and ``δ_{b,p}`` the
gradient of ℓ_b with respect to the layer output there. :meth:`Model.apply`
returns the taps and adds a caller-supplied perturbation to each layer's
output; differentiating the summed loss with respect to a zero perturbation
yields every δ in one backward pass (see :mod:`reconrisk._src.train.dpsgd`).

Models (Hayes, Mahloujifar & Balle 2023, Table 1 and App. A; names as accepted by :func:`get_model`):

* ``mlp`` — input→10→10 with eLU: the Hayes, Mahloujifar & Balle 2023 MNIST model (7,960 parameters
  on 784 inputs, 760 on the 64 inputs of the digits data).
* ``mlp:W1,W2,...`` — an MLP with the given hidden widths (eLU).
* ``cnn`` — conv3×3/2 (16) → eLU → conv3×3/2 (32) → eLU → dense (10), SAME padding.
* ``logistic`` — multinomial logistic regression (one dense layer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..errors import ReconRiskError

MODEL_NAMES = ("mlp", "cnn", "logistic", "mlp:W1,W2,...")


@dataclass(frozen=True)
class Layer:
    """One affine layer. ``kind`` is ``"dense"`` or ``"conv"``."""

    kind: str
    in_features: int  # K: input features per position (C_in·k·k for conv)
    out_features: int  # O
    kernel: int = 1
    stride: int = 1
    in_hw: tuple[int, int] = (1, 1)
    out_hw: tuple[int, int] = (1, 1)
    in_channels: int = 0

    @property
    def positions(self) -> int:
        return self.out_hw[0] * self.out_hw[1]

    @property
    def num_params(self) -> int:
        return self.in_features * self.out_features + self.out_features


@dataclass(frozen=True)
class Model:
    """A feed-forward classifier: affine layers with eLU between them."""

    name: str
    input_shape: tuple[int, int, int]  # (H, W, C); inputs arrive flattened
    layers: tuple[Layer, ...]
    num_classes: int

    @property
    def input_dim(self) -> int:
        return int(math.prod(self.input_shape))

    @property
    def num_params(self) -> int:
        return sum(layer.num_params for layer in self.layers)

    # -- parameters -----------------------------------------------------------
    def init(self, key):
        """LeCun-normal weights (std 1/sqrt(fan_in)), zero biases."""
        from .._jax import jax
        import jax.numpy as jnp

        keys = jax.random.split(key, len(self.layers))
        params = []
        for k, layer in zip(keys, self.layers):
            w = jax.random.normal(k, (layer.in_features, layer.out_features), jnp.float32)
            params.append({"w": w / math.sqrt(layer.in_features), "b": jnp.zeros((layer.out_features,), jnp.float32)})
        return tuple(params)

    def unravel(self):
        """``ravel_pytree``'s unravel for this model's parameters: flat vector -> :meth:`init`'s tree.

        Built from the parameters' shapes (``jax.eval_shape``), not from drawn values: the same function as
        ``ravel_pytree(self.init(key))[1]`` (it depends on the tree, shapes and dtypes only), without the eager
        random draws, each shape of which compiled its own program (~1.5 s for the digits MLP in a fresh process).
        """
        from .._jax import jax
        from jax.flatten_util import ravel_pytree

        shapes = jax.eval_shape(self.init, jax.ShapeDtypeStruct((2,), np.uint32))
        return ravel_pytree(jax.tree_util.tree_map(lambda s: np.zeros(s.shape, s.dtype), shapes))[1]

    def zero_perturbations(self, batch: int):
        import jax.numpy as jnp

        return tuple(jnp.zeros((batch, layer.positions, layer.out_features), jnp.float32) for layer in self.layers)

    # -- forward --------------------------------------------------------------
    def apply(self, params, x, perturbations=None, tap_major: bool = False):
        """Logits (B, classes) and the taps: per layer its input, shaped (B, P, K).

        ``x`` is (B, H·W·C). ``perturbations`` (one (B, P, O) array per layer)
        are added to the layer outputs before the activation.

        ``tap_major=True``: a convolution's taps come with their K = C·k·k
        features in **tap-major** order (index ``t·C + c`` instead of the
        kernel's ``c·k² + t``; see :func:`im2col`) and the layer multiplies
        them by the kernel's rows permuted to match. Same outputs up to float
        rounding (the K terms of each dot are summed in another order); a
        caller who forms per-example kernel gradients from these taps gets
        them in tap-major row order and must permute back
        (:func:`tap_major_rows`). Used by the DP-SGD step's clipped sum: on
        the 28×28 CNN's second layer the tap-major gather measured 1.5× and
        its backward (a pad-and-add) 3× cheaper on CPU.
        """
        from .._jax import jax

        b = x.shape[0]
        h = x
        taps = []
        for i, (layer, p) in enumerate(zip(self.layers, params)):
            w = p["w"]
            if layer.kind == "conv":
                img = h.reshape(b, layer.in_hw[0], layer.in_hw[1], layer.in_channels)
                permute = tap_major and layer.in_channels > 1
                a = im2col(img, layer.kernel, layer.stride, layer.out_hw, tap_major=permute)
                if permute:
                    w = tap_major_rows(layer, w)
            else:
                a = h.reshape(b, 1, layer.in_features)
            taps.append(a)
            s = a @ w + p["b"]
            if perturbations is not None:
                s = s + perturbations[i]
            if i < len(self.layers) - 1:
                s = jax.nn.elu(s)
            h = s.reshape(b, -1)
        return h, tuple(taps)

    def logits(self, params, x):
        return self.apply(params, x)[0]

    def to_dict(self) -> dict:
        return {"name": self.name, "num_params": self.num_params, "input_shape": list(self.input_shape)}


def tap_major_rows(layer: Layer, w, inverse: bool = False):
    """A conv kernel's (C·k², O) rows reordered from C-major (``c·k² + t``) to tap-major (``t·C + c``), or back.

    Works on any array whose second-to-last axis is the layer's K rows (a
    kernel (K, O) or per-example kernel gradients (B, K, O)); the values are
    only moved.
    """
    c, t = layer.in_channels, layer.kernel * layer.kernel
    lead, o = w.shape[:-2], w.shape[-1]
    order = (c, t) if not inverse else (t, c)
    n = len(lead)
    perm = tuple(range(n)) + (n + 1, n, n + 2)
    return w.reshape(*lead, *order, o).transpose(perm).reshape(*lead, c * t, o)


def im2col(img, kernel: int, stride: int, out_hw, tap_major: bool = False):
    """(B, H, W, C) → (B, P, C·k·k) patches for a SAME-padded k×k convolution, C-major features.

    Built from k² strided slices of the padded image, so both the forward pass
    and its transpose (a pad-and-add) are memory moves, not convolutions; the
    layer is then one large matrix product (B·P × K) @ (K × O).
    ``tap_major=True`` orders the features ``t·C + c`` (tap t = i·k + j):
    the k² slices are concatenated whole along the channel axis, which XLA
    (CPU) writes 1.5× faster, and whose transpose is ~3× faster, than the
    C-major interleave.
    """
    import jax.numpy as jnp

    b, h, w, c = img.shape
    oh, ow = out_hw
    pads = []
    for n, o in ((h, oh), (w, ow)):
        total = max((o - 1) * stride + kernel - n, 0)
        pads.append((total // 2, total - total // 2))
    x = jnp.pad(img, ((0, 0), pads[0], pads[1], (0, 0)))
    cols = [x[:, i : i + stride * (oh - 1) + 1 : stride, j : j + stride * (ow - 1) + 1 : stride, :]
            for i in range(kernel) for j in range(kernel)]
    if tap_major:
        return jnp.concatenate(cols, axis=-1).reshape(b, oh * ow, kernel * kernel * c)
    patches = jnp.stack(cols, axis=-1)  # (B, oh, ow, C, k·k)
    return patches.reshape(b, oh * ow, c * kernel * kernel)


def _conv_out(n: int, stride: int) -> int:
    return -(-n // stride)  # SAME padding


#: Largest dense model accepted (``--model mlp:100000000`` hung before this limit).
MAX_PARAMS = 10**7


def mlp(input_shape, hidden=(10,), num_classes: int = 10, name: str | None = None) -> Model:
    """Fully connected eLU network ``input → hidden… → num_classes``."""
    shape = _shape(input_shape)
    widths = [int(math.prod(shape)), *[v.integer("hidden width", w, minimum=1) for w in hidden], num_classes]
    params = sum((widths[i] + 1) * widths[i + 1] for i in range(len(widths) - 1))
    if params > MAX_PARAMS:
        raise ReconRiskError(
            f"--model {'mlp:' + ','.join(map(str, hidden))!r} has {params:,} parameters on {widths[0]} inputs; "
            f"the limit is {MAX_PARAMS:,} (per-example gradients of every trial must fit in memory)"
        )
    layers = tuple(Layer("dense", widths[i], widths[i + 1]) for i in range(len(widths) - 1))
    label = name or ("mlp" if tuple(hidden) == (10,) else "mlp:" + ",".join(str(w) for w in hidden))
    return Model(label, shape, layers, num_classes)


def logistic(input_shape, num_classes: int = 10) -> Model:
    """Multinomial logistic regression."""
    return mlp(input_shape, hidden=(), num_classes=num_classes, name="logistic")


def cnn(input_shape, channels=(16, 32), num_classes: int = 10, kernel: int = 3, stride: int = 2) -> Model:
    """Small CNN: strided 3×3 convolutions with eLU, then a dense classifier."""
    h, w, c = _shape(input_shape)
    layers = []
    for out in channels:
        oh, ow = _conv_out(h, stride), _conv_out(w, stride)
        layers.append(Layer("conv", c * kernel * kernel, out, kernel, stride, (h, w), (oh, ow), c))
        h, w, c = oh, ow, out
    layers.append(Layer("dense", h * w * c, num_classes))
    return Model("cnn", _shape(input_shape), tuple(layers), num_classes)


def _shape(input_shape) -> tuple[int, int, int]:
    if isinstance(input_shape, int):
        return (1, 1, v.integer("input_dim", input_shape, minimum=1))
    shape = tuple(int(s) for s in input_shape)
    if len(shape) == 1:
        return (1, 1, shape[0])
    if len(shape) != 3 or min(shape) < 1:
        raise ReconRiskError(f"input_shape must be (H, W, C) with positive sizes; found {input_shape!r}")
    return shape  # type: ignore[return-value]


def get_model(name: str, input_shape, num_classes: int = 10) -> Model:
    """A model by name: ``mlp``, ``mlp:W1,W2,...``, ``cnn`` or ``logistic``."""
    if name == "mlp":
        return mlp(input_shape, (10,), num_classes)
    if name == "cnn":
        h, w, _ = _shape(input_shape)
        if h < 2 or w < 2:
            raise ReconRiskError(f"model 'cnn' needs image inputs (H, W ≥ 2); found input_shape {input_shape!r}")
        return cnn(input_shape, num_classes=num_classes)
    if name == "logistic":
        return logistic(input_shape, num_classes)
    if isinstance(name, str) and name.startswith("mlp:"):
        try:
            widths = tuple(int(w) for w in name[4:].split(","))
        except ValueError:
            raise ReconRiskError(f"model must be one of {', '.join(MODEL_NAMES)}; found {name!r}") from None
        return mlp(input_shape, widths, num_classes)
    raise ReconRiskError(f"model must be one of {', '.join(MODEL_NAMES)}; found {name!r}")
