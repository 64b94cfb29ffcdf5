"""Public path of :mod:`reconrisk._src.integrations.jax_privacy`: the same module object (see there)."""
# reconrisk's public face: this path is the implementation module itself (one object: isinstance and monkeypatching agree)

import sys as _sys

from reconrisk._src.integrations import jax_privacy as _implementation

_sys.modules[__name__] = _implementation
