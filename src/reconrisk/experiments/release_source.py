"""Where a report's :class:`~reconrisk.release.Release` comes from: flags, a TOML file, or a saved Opacus accountant.

Three sources, exactly one per report (``reconrisk report``):

* **flags** — ``noise_multiplier``, ``sample_rate``, ``steps`` (and ``clip_norm``), as for ``reconrisk bound``;
* **TOML** (:func:`release_from_toml`) — the same keys at the top level or under ``[release]``, or
  ``segments = [[σ, q, T], …]`` for a schedule; an unknown key is an error (never silently ignored)::

      [release]
      noise_multiplier = 1.1
      sample_rate = 0.01
      steps = 1000
      clip_norm = 1.0

* **a saved Opacus accountant state** (:func:`release_from_opacus_file`) — what Opacus's
  ``accountant.state_dict()`` holds (``{"history": [(σ, q, steps), …], "mechanism": "rdp"}``), a bare history
  list, or a ``PrivacyEngine.save_checkpoint`` file (key ``privacy_accountant_state_dict``). Accepted as
  JSON, or as a ``torch.save`` file read with ``torch.load(weights_only=True)`` — never unpickled: the
  weights-only loader refuses arbitrary objects. Without torch installed a torch file is refused in one line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import _validate as v
from ..errors import ReconRiskError
from ..release import Release

#: Largest release file read (a history of millions of segments is not a release anyone saves by hand).
MAX_FILE_BYTES = 64 * 2**20
_RELEASE_KEYS = ("noise_multiplier", "sample_rate", "steps", "clip_norm", "segments")


def _read_bytes(path, what: str) -> tuple[Path, bytes]:
    p = Path(path)
    if not p.is_file():
        raise ReconRiskError(f"{what} must be an existing file; found {str(p)!r}")
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ReconRiskError(f"{what} must be at most {MAX_FILE_BYTES} bytes; found {size} bytes in {str(p)!r}")
    return p, p.read_bytes()


def file_provenance(path: Path, data: bytes) -> dict:
    """Path and SHA-256 of a file a report was built from."""
    return {"path": str(path), "sha256": hashlib.sha256(data).hexdigest()}


def release_from_mapping(d: Any, where: str, *, clip_norm: float | None = None) -> Release:
    """A release from a mapping with the keys of :data:`_RELEASE_KEYS` (checked; unknown keys refused)."""
    if not isinstance(d, dict):
        raise ReconRiskError(f"{where} must hold a table of release keys {', '.join(_RELEASE_KEYS)}; found {type(d).__name__}")
    unknown = sorted(set(d) - set(_RELEASE_KEYS))
    if unknown:
        raise ReconRiskError(f"{where} has unknown key(s) {', '.join(unknown)}; expected some of {', '.join(_RELEASE_KEYS)}")
    c = d.get("clip_norm", 1.0) if clip_norm is None else clip_norm
    if "segments" in d:
        extra = sorted(set(d) & {"noise_multiplier", "sample_rate", "steps"})
        if extra:
            raise ReconRiskError(f"{where}: give segments or noise_multiplier/sample_rate/steps, not both; found {', '.join(extra)}")
        return Release.schedule(d["segments"], clip_norm=c)
    missing = [k for k in ("noise_multiplier", "sample_rate", "steps") if k not in d]
    if missing:
        raise ReconRiskError(f"{where} must give noise_multiplier, sample_rate and steps (or segments); missing {', '.join(missing)}")
    return Release(d["noise_multiplier"], d["sample_rate"], d["steps"], c)


def release_from_toml(path) -> tuple[Release, dict]:
    """The release of a TOML file and its provenance (path, SHA-256)."""
    import tomllib

    p, data = _read_bytes(path, "release file")
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ReconRiskError(f"release file {str(p)!r} is not valid TOML: {exc}") from None
    if "release" in doc:
        rest = sorted(set(doc) - {"release"})
        if rest:
            raise ReconRiskError(f"release file {str(p)!r}: keys outside [release] are not read; found {', '.join(rest)}")
        doc = doc["release"]
    rel = release_from_mapping(doc, f"release file {str(p)!r}")
    return rel, {"source": "toml", **file_provenance(p, data)}


def _history_of(obj: Any, where: str) -> list:
    """The ``[(σ, q, steps), …]`` list inside an accountant state, a checkpoint or a bare list."""
    if isinstance(obj, dict):
        if "privacy_accountant_state_dict" in obj:  # PrivacyEngine.save_checkpoint
            obj = obj["privacy_accountant_state_dict"]
        if not isinstance(obj, dict) or "history" not in obj:
            raise ReconRiskError(
                f"{where} must hold an Opacus accountant state ({{'history': [[noise_multiplier, sample_rate, steps], ...]}}); "
                f"found keys {sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__}"
            )
        obj = obj["history"]
    if not isinstance(obj, (list, tuple)):
        raise ReconRiskError(f"{where}: history must be a list of [noise_multiplier, sample_rate, steps]; found {type(obj).__name__}")
    if not obj:
        raise ReconRiskError(f"{where}: the accountant's history is empty (no optimisation step was taken yet)")
    return [tuple(h) if isinstance(h, (list, tuple)) else h for h in obj]


def _load_torch(p: Path, data: bytes):
    try:
        import torch
    except ImportError:
        raise ReconRiskError(
            f"opacus file {str(p)!r} is not JSON and torch is not installed to read it as a torch.save file "
            "(safely, weights_only=True); save the history as JSON: json.dump(accountant.state_dict(), f)"
        ) from None
    import io

    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError / RuntimeError for foreign or unsafe content
        raise ReconRiskError(
            f"opacus file {str(p)!r} is neither JSON nor a torch file loadable with weights_only=True "
            f"(arbitrary pickles are never loaded): {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        ) from None


def release_from_opacus_file(path, *, clip_norm: float = 1.0) -> tuple[Release, dict]:
    """The release a saved Opacus accountant state (JSON, or torch.save read weights-only) accounts for."""
    clip_norm = v.positive("clip_norm", clip_norm)
    p, data = _read_bytes(path, "opacus file")
    where = f"opacus file {str(p)!r}"
    try:
        obj = json.loads(data.decode("utf-8"))
        fmt = "json"
    except (UnicodeDecodeError, json.JSONDecodeError):
        obj = _load_torch(p, data)
        fmt = "torch (weights_only)"
    hist = _history_of(obj, where)
    try:  # the same reading as for a live accountant (Release.from_opacus reads its .history)
        rel = Release.from_opacus(SimpleNamespace(history=hist), clip_norm=clip_norm)
    except ReconRiskError as exc:
        raise ReconRiskError(f"{where}: {exc}") from None
    mech = obj.get("mechanism") if isinstance(obj, dict) else None
    if isinstance(obj, dict) and "privacy_accountant_state_dict" in obj:
        mech = obj["privacy_accountant_state_dict"].get("mechanism")
    return rel, {"source": "opacus", "format": fmt, "mechanism": mech, **file_provenance(p, data)}


def resolve_release(*, noise_multiplier=None, sample_rate=None, steps=None, clip_norm=None, release_file=None,
                    from_opacus=None) -> tuple[Release, dict]:
    """Exactly one source: the three flags, ``release_file`` (TOML) or ``from_opacus``; returns (release, provenance)."""
    flags = {"noise_multiplier": noise_multiplier, "sample_rate": sample_rate, "steps": steps}
    given_flags = [k for k, x in flags.items() if x is not None]
    sources = [s for s, on in (("flags", bool(given_flags)), ("--release", release_file is not None),
                                ("--from-opacus", from_opacus is not None)) if on]
    if len(sources) != 1:
        raise ReconRiskError(
            "give the release once: --noise-multiplier/--sample-rate/--steps, or --release FILE.toml, or --from-opacus FILE; "
            f"found {', '.join(sources) or 'none'}"
        )
    if release_file is not None:
        if clip_norm is not None:
            raise ReconRiskError("--clip-norm goes inside the release file (key clip_norm), not beside --release")
        return release_from_toml(release_file)
    if from_opacus is not None:
        return release_from_opacus_file(from_opacus, clip_norm=1.0 if clip_norm is None else clip_norm)
    missing = [f"--{k.replace('_', '-')}" for k, x in flags.items() if x is None]
    if missing:
        raise ReconRiskError(f"the release flags need all of --noise-multiplier, --sample-rate, --steps; missing {', '.join(missing)}")
    rel = Release(noise_multiplier, sample_rate, steps, 1.0 if clip_norm is None else clip_norm)
    return rel, {"source": "flags"}
