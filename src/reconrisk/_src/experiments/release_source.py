"""Where a report's :class:`~reconrisk._src.release.Release` comes from: flags, a TOML file, or a saved Opacus accountant.

Three sources, exactly one per report (``reconrisk report``):

* **flags** — ``noise_multiplier``, ``sample_rate``, ``steps`` (and ``clip_norm``), as for ``reconrisk bound``;
* **TOML** (:func:`release_from_toml`) — the same keys at the top level or under ``[release]``, or
  ``segments = [[σ, q, T], …]`` for a schedule; an unknown key is an error (never silently ignored)::

      [release]
      noise_multiplier = 1.1
      sample_rate = 0.01
      steps = 1000
      clip_norm = 1.0

  fixed-size batches: ``sampler = "fixed"`` with ``batch_size`` and ``dataset_size`` instead of
  ``sample_rate`` (``sampler = "full"``: q = 1); or ``dp_accounting`` events, one table each
  (:func:`event_from_mapping`; Gaussian events become a :class:`Release`, others — Laplace — stay an
  event and get an :class:`~reconrisk._src.analysis.events.EventAnalysis` from :func:`~reconrisk._src.analysis.dispatch.analyse`)::

      [[release.events]]
      type = "sampled_without_replacement_gaussian"
      noise_multiplier = 0.5          # dp_accounting's units: std / replace-one sensitivity (2C)
      source_dataset_size = 1000
      sample_size = 100
      count = 500

* **a saved Opacus accountant state** (:func:`release_from_opacus_file`) — what Opacus's
  ``accountant.state_dict()`` holds (``{"history": [(σ, q, steps), …], "mechanism": "rdp"}``), a bare history
  list, or a ``PrivacyEngine.save_checkpoint`` file (key ``privacy_accountant_state_dict``). Accepted as
  JSON, or as a ``torch.save`` file read with ``torch.load(weights_only=True)`` — never unpickled: the
  weights-only loader refuses arbitrary objects. Without torch installed a torch file is refused in one line.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import _validate as v
from .._io import parse_text
from ..adapters.opacus_loaders import LoaderPlan, LoaderRun
from ..errors import ReconRiskError, SyntaxInvalid
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.traverse import steps as event_steps
from ..release import Release

#: Largest release file read (a history of millions of segments is not a release anyone saves by hand).
MAX_FILE_BYTES = 64 * 2**20
_RELEASE_KEYS = ("noise_multiplier", "sample_rate", "steps", "clip_norm", "segments", "sampler", "batch_size",
                 "dataset_size", "events")
#: ``[[release.events]]`` entries: the ``dp_accounting`` event each ``type`` builds and the keys it reads.
_EVENT_TYPES = {
    "gaussian": ("GaussianDpEvent", ("noise_multiplier",)),
    "poisson_sampled_gaussian": ("PoissonSampledDpEvent", ("noise_multiplier", "sampling_probability")),
    "sampled_without_replacement_gaussian": ("SampledWithoutReplacementDpEvent",
                                             ("noise_multiplier", "source_dataset_size", "sample_size")),
    "laplace": ("LaplaceDpEvent", ("noise_multiplier",)),
    "poisson_sampled_laplace": ("PoissonSampledDpEvent", ("noise_multiplier", "sampling_probability")),
}


def event_from_mapping(items: Any, where: str):
    """The ``dp_accounting`` ``ComposedDpEvent`` of ``[[release.events]]`` tables (``type``, its keys, ``count``).

    Types: ``gaussian``, ``poisson_sampled_gaussian``, ``sampled_without_replacement_gaussian`` (noise
    multipliers in ``dp_accounting``'s units: relative to the relation's sensitivity), ``laplace`` and
    ``poisson_sampled_laplace`` (the Laplace scale b for sensitivity 1).
    """
    import dp_accounting as dpa

    if not isinstance(items, list) or not items:
        raise ReconRiskError(f"{where}: events must be a non-empty list of tables ([[release.events]]); found {items!r:.60}")
    out = []
    for i, d in enumerate(items):
        w = f"{where} events[{i}]"
        if not isinstance(d, dict) or d.get("type") not in _EVENT_TYPES:
            raise ReconRiskError(f"{w}: type must be one of {', '.join(_EVENT_TYPES)}; found {d.get('type') if isinstance(d, dict) else d!r}")
        cls_name, keys = _EVENT_TYPES[d["type"]]
        unknown = sorted(set(d) - {"type", "count", *keys})
        missing = [k for k in keys if k not in d]
        if unknown or missing:
            raise ReconRiskError(f"{w} ({d['type']}): needs {', '.join(keys)} (and optionally count); "
                                 f"found unknown {unknown or 'none'}, missing {missing or 'none'}")
        inner = (dpa.LaplaceDpEvent if "laplace" in d["type"] else dpa.GaussianDpEvent)(
            v.positive(f"{w} noise_multiplier", d["noise_multiplier"]))
        if d["type"] in ("poisson_sampled_gaussian", "poisson_sampled_laplace"):
            inner = dpa.PoissonSampledDpEvent(v.sample_rate(f"{w} sampling_probability", d["sampling_probability"]), inner)
        elif d["type"] == "sampled_without_replacement_gaussian":
            inner = dpa.SampledWithoutReplacementDpEvent(v.integer(f"{w} source_dataset_size", d["source_dataset_size"]),
                                                         v.integer(f"{w} sample_size", d["sample_size"]), inner)
        out.append(dpa.SelfComposedDpEvent(inner, v.steps(f"{w} count", d.get("count", 1))))
    return dpa.ComposedDpEvent(out)


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


def release_from_mapping(d: Any, where: str, *, clip_norm: float | None = None, events: bool = False):
    """A release from a mapping with the keys of :data:`_RELEASE_KEYS` (checked; unknown keys refused).

    ``events=True``: ``events`` that are not DP-SGD with Gaussian noise (Laplace) are returned as the
    ``dp_accounting`` event (for :func:`~reconrisk._src.analysis.dispatch.analyse`); otherwise they are refused in one line naming it.
    """
    if not isinstance(d, dict):
        raise ReconRiskError(f"{where} must hold a table of release keys {', '.join(_RELEASE_KEYS)}; found {type(d).__name__}")
    unknown = sorted(set(d) - set(_RELEASE_KEYS))
    if unknown:
        raise ReconRiskError(f"{where} has unknown key(s) {', '.join(unknown)}; expected some of {', '.join(_RELEASE_KEYS)}")
    c = d.get("clip_norm", 1.0) if clip_norm is None else clip_norm
    if "events" in d:
        extra = sorted(set(d) - {"events", "clip_norm"})
        if extra:
            raise ReconRiskError(f"{where}: give events or the release keys, not both; found {', '.join(extra)}")
        event = event_from_mapping(d["events"], where)
        try:
            steps = event_steps(event)
            if events and any(not isinstance(s.mechanism, Gaussian) for s in steps):
                return event  # not DP-SGD with Gaussian noise (asked of its steps): the event's own analysis
            return Release.from_steps(steps, clip_norm=c)
        except ReconRiskError as exc:
            raise ReconRiskError(f"{where}: {exc}") from None
    sampler = d.get("sampler", "poisson")
    if "batch_size" in d or "dataset_size" in d:
        if sampler != "fixed" or "sample_rate" in d or "segments" in d:
            raise ReconRiskError(f"{where}: batch_size and dataset_size describe sampler = \"fixed\" (instead of "
                                 f"sample_rate); found sampler={sampler!r}" + (" and sample_rate" if "sample_rate" in d else ""))
        missing = [k for k in ("noise_multiplier", "batch_size", "dataset_size", "steps") if k not in d]
        if missing:
            raise ReconRiskError(f"{where} must give noise_multiplier, batch_size, dataset_size and steps; missing {', '.join(missing)}")
        return Release.fixed_batch(d["noise_multiplier"], d["batch_size"], d["dataset_size"], d["steps"], c)
    if "segments" in d:
        extra = sorted(set(d) & {"noise_multiplier", "sample_rate", "steps"})
        if extra:
            raise ReconRiskError(f"{where}: give segments or noise_multiplier/sample_rate/steps, not both; found {', '.join(extra)}")
        return Release.schedule(d["segments"], clip_norm=c, sampler=sampler)
    missing = [k for k in ("noise_multiplier", "sample_rate", "steps") if k not in d]
    if missing:
        raise ReconRiskError(f"{where} must give noise_multiplier, sample_rate and steps (or segments); missing {', '.join(missing)}")
    return Release(d["noise_multiplier"], d["sample_rate"], d["steps"], c, sampler=sampler)


def release_from_toml(path, *, events: bool = False) -> tuple[Any, dict]:
    """The release of a TOML file and its provenance (path, SHA-256); ``events=True`` as for
    :func:`release_from_mapping` (a Laplace event comes back as the event)."""
    p, data = _read_bytes(path, "release file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReconRiskError(f"release file {str(p)!r} is not valid TOML: {exc}") from None
    doc = parse_text(text, "toml", f"release file {str(p)!r}")
    if "release" in doc:
        rest = sorted(set(doc) - {"release"})
        if rest:
            raise ReconRiskError(f"release file {str(p)!r}: keys outside [release] are not read; found {', '.join(rest)}")
        doc = doc["release"]
    rel = release_from_mapping(doc, f"release file {str(p)!r}", events=events)
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
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError / RuntimeError for foreign or unsafe content
        raise ReconRiskError(
            f"opacus file {str(p)!r} is neither JSON nor a torch file loadable with weights_only=True "
            f"(arbitrary pickles are never loaded): {type(exc).__name__}: {_torch_reason(exc)}"
        ) from None


def _torch_reason(exc: BaseException) -> str:
    """torch's reason for refusing a file, whole and on one line.

    For a weights-only refusal torch's message opens with advice to rerun with ``weights_only=False`` (to
    unpickle — the one thing this reader never does); the reason proper follows "WeightsUnpickler error:"
    and is kept whole, up to torch's pointer to its documentation. Any other message is kept whole.
    """
    text = " ".join(str(exc).split())
    start = text.find("WeightsUnpickler error:")
    if start < 0:
        return text
    reason = text[start:]
    end = reason.find(" Check the documentation of torch.load")
    return reason if end < 0 else reason[:end]


#: Keys under which a saved state may hold the clip norm C (Opacus calls it ``max_grad_norm``).
CLIP_NORM_KEYS = ("max_grad_norm", "clip_norm")


def _clip_norm_in(obj: Any) -> tuple[Any, str] | None:
    """(C, where) if the saved state holds the clip norm: at the top level, in the accountant state, in the
    optimizer state or one of its param_groups (the first found), else None."""
    if not isinstance(obj, dict):
        return None
    places = [("", obj)]
    for key in ("privacy_accountant_state_dict", "optimizer_state_dict"):
        if isinstance(obj.get(key), dict):
            places.append((key + ".", obj[key]))
    opt = obj.get("optimizer_state_dict")
    if isinstance(opt, dict) and isinstance(opt.get("param_groups"), list):
        places += [(f"optimizer_state_dict.param_groups[{i}].", g) for i, g in enumerate(opt["param_groups"])
                   if isinstance(g, dict)]
    for prefix, d in places:
        for key in CLIP_NORM_KEYS:
            if key in d and d[key] is not None:
                return d[key], prefix + key
    return None


def release_from_opacus_file(path, *, clip_norm: float | None = None) -> tuple[Release, dict]:
    """The release a saved Opacus accountant state (JSON, or torch.save read weights-only) accounts for.

    The clip norm C is ``clip_norm`` when given, else the file's ``max_grad_norm`` (or ``clip_norm``) where the
    state holds one (:data:`CLIP_NORM_KEYS`; a given ``clip_norm`` that disagrees with the file is refused),
    else 1.0 — the provenance says which (``clip_norm_source``). C does not change ε or the ReRo bound; it
    scales the noise std σC that Bayes' capacity reads. A :class:`~reconrisk.integrations.opacus.ReconRiskAccountant`'s
    state saying ``batch_sampling`` shuffled or sequential gives its stand-in ``Release.shuffled`` (as the
    live accountant), its passes counted from the saved ``loader`` over the saved ``iterations`` (the loader
    iterations the run took; a state without them, saved before they were observed: the steps in the loader's
    order, and the warning says so; a bare "sequential": a SequentialSampler, one pass per loader epoch; a bare
    "shuffled" or "with_replacement" is refused: its passes are not known), named in the provenance's
    ``batch_sampling``.
    """
    if clip_norm is not None:
        clip_norm = v.positive("clip_norm", clip_norm)
    p, data = _read_bytes(path, "opacus file")
    where = f"opacus file {str(p)!r}"
    try:
        text = data.decode("utf-8")
        obj, fmt = parse_text(text, "json", where), "json"
    except UnicodeDecodeError:
        obj, fmt = _load_torch(p, data), "torch (weights_only)"
    except SyntaxInvalid:  # (too deep, an integer too long: refused in one line, as ReconRiskError)
        obj, fmt = _load_torch(p, data), "torch (weights_only)"
    hist = _history_of(obj, where)
    found = _clip_norm_in(obj)
    if found is not None:
        c_file = v.positive(f"{where}: {found[1]}", found[0])
        if clip_norm is not None and clip_norm != c_file:
            raise ReconRiskError(f"--clip-norm {clip_norm:g} disagrees with the clip norm {c_file:g} saved in {where} "
                                 f"({found[1]}); drop --clip-norm or fix the file")
        clip_norm, c_source = c_file, f"file ({found[1]})"
    elif clip_norm is not None:
        c_source = "--clip-norm"
    else:
        clip_norm, c_source = 1.0, "default 1.0 (not in the file; give --clip-norm)"
    state = obj.get("privacy_accountant_state_dict", obj) if isinstance(obj, dict) else None
    kind = state.get("batch_sampling", "poisson") if isinstance(state, dict) else "poisson"  # ReconRiskAccountant's
    loader = state.get("loader") if isinstance(state, dict) else None
    try:  # the same reading as for a live accountant (Release.from_opacus reads .history, .loader, .batch_sampling)
        plan = None if loader is None else LoaderPlan.from_dict(loader)
        if plan is not None and plan.kind != kind:
            raise ReconRiskError(f"its loader draws {plan.kind} batches but its batch_sampling says {kind!r}")
        if plan is None and isinstance(state, dict) and state.get("iterations") is not None:
            raise ReconRiskError("it holds loader iterations but no loader (its plan): they cannot be read")
        run = None if plan is None else LoaderRun.from_state(plan, state)  # None: counted in the loader's order
        rel = Release.from_opacus(SimpleNamespace(history=hist, batch_sampling=kind, loader=plan, loader_run=run),
                                  clip_norm=clip_norm)
    except ReconRiskError as exc:
        raise ReconRiskError(f"{where}: {exc}") from None
    mech = obj.get("mechanism") if isinstance(obj, dict) else None
    if isinstance(obj, dict) and "privacy_accountant_state_dict" in obj:
        mech = obj["privacy_accountant_state_dict"].get("mechanism")
    prov = {"source": "opacus", "format": fmt, "mechanism": mech, "clip_norm_source": c_source}
    if kind != "poisson":  # a ReconRiskAccountant told of a shuffled/sequential loader: the stand-in was read
        prov["batch_sampling"] = f"{kind} (the sound stand-in Release.shuffled was analysed)"
        if loader is not None:
            prov["loader"] = plan.describe()
            prov["loader_iterations"] = ("not recorded (the steps counted in the loader's order)" if run is None
                                         else f"{len(run.iterations)} observed")
    return rel, {**prov, **file_provenance(p, data)}


#: every option through which a command may take its release, as the messages spell them
SOURCE_OPTIONS = frozenset({"--noise-multiplier", "--sample-rate", "--steps", "--clip-norm", "--release",
                            "--from-opacus", "--batch-size", "--dataset-size"})


def _named(options, *names: str) -> list[str]:
    """Those of ``names`` the command has (``options``: its option names; None: every source option)."""
    return [n for n in names if options is None or n in options]


def _ways(options) -> str:
    """The ways the command offers to give its release, each named only by options it has."""
    ways = []
    if _named(options, "--noise-multiplier", "--sample-rate", "--steps") == ["--noise-multiplier", "--sample-rate",
                                                                             "--steps"]:
        fixed = len(_named(options, "--batch-size", "--dataset-size")) == 2
        ways.append("--noise-multiplier/--sample-rate/--steps"
                    + (" (or --batch-size/--dataset-size instead of --sample-rate)" if fixed else ""))
    ways += [w for o, w in (("--release", "--release FILE.toml"), ("--from-opacus", "--from-opacus FILE"))
             if _named(options, o)]
    if options is not None and "--from" in options:  # `reconrisk risk`: a guarantee alone answers too
        ways.append("a guarantee alone (--from dp|rdp|zcdp)")
    return ", or ".join(ways)


def resolve_release(*, noise_multiplier=None, sample_rate=None, steps=None, clip_norm=None, release_file=None,
                    from_opacus=None, options=None) -> tuple[Release, dict]:
    """Exactly one source: the three flags, ``release_file`` (TOML) or ``from_opacus``; returns (release, provenance).

    ``options``: the option names of the command asking (its error messages name only those); None: all.
    """
    flags = {"noise_multiplier": noise_multiplier, "sample_rate": sample_rate, "steps": steps}
    given_flags = [k for k, x in flags.items() if x is not None]
    sources = [s for s, on in (("flags", bool(given_flags)), ("--release", release_file is not None),
                                ("--from-opacus", from_opacus is not None)) if on]
    if len(sources) != 1:
        raise ReconRiskError(
            f"give the release once: {_ways(options)}; found {', '.join(sources) or 'none'}"
        )
    if release_file is not None:
        if clip_norm is not None:
            raise ReconRiskError("--clip-norm goes inside the release file (key clip_norm), not beside --release")
        return release_from_toml(release_file)
    if from_opacus is not None:
        return release_from_opacus_file(from_opacus, clip_norm=clip_norm)
    missing = [f"--{k.replace('_', '-')}" for k, x in flags.items() if x is None]
    if missing:
        raise ReconRiskError(f"the release flags need all of --noise-multiplier, --sample-rate, --steps; missing {', '.join(missing)}")
    rel = Release(noise_multiplier, sample_rate, steps, 1.0 if clip_norm is None else clip_norm)
    return rel, {"source": "flags"}


def resolve_source(*, noise_multiplier=None, sample_rate=None, steps=None, clip_norm=None, release_file=None,
                   from_opacus=None, batch_size=None, dataset_size=None, options=None) -> tuple[Any, dict]:
    """What was run, read once from exactly one source, and its provenance: a :class:`~reconrisk._src.release.Release`,
    or for a TOML file of ``dp_accounting`` events that are not DP-SGD with Gaussian noise (Laplace) the event.

    Sources as :func:`resolve_release`; ``batch_size`` and ``dataset_size`` (with ``noise_multiplier`` and
    ``steps``, instead of ``sample_rate``) describe fixed-size batches without replacement. A command builds
    its release here, where its flags are parsed, and carries it on (:func:`~reconrisk._src.analysis.dispatch.analyse`,
    :func:`reconrisk._src.experiments.riskreport.risk_report`). ``options``: as for :func:`resolve_release`.
    """
    if batch_size is not None or dataset_size is not None:
        if sample_rate is not None or release_file is not None or from_opacus is not None:
            others = _named(options, "--sample-rate", "--release", "--from-opacus")
            raise ReconRiskError("--batch-size and --dataset-size describe fixed-size batches instead of --sample-rate "
                                 "(with --noise-multiplier and --steps); give them without "
                                 + (", ".join(others[:-1]) + " or " + others[-1] if len(others) > 1 else others[0]))
        missing = [f for f, x in (("--noise-multiplier", noise_multiplier), ("--steps", steps), ("--batch-size", batch_size),
                                  ("--dataset-size", dataset_size)) if x is None]
        if missing:
            raise ReconRiskError(f"fixed-size batches need --noise-multiplier, --steps, --batch-size and --dataset-size; "
                                 f"missing {', '.join(missing)}")
        rel = Release.fixed_batch(noise_multiplier, batch_size, dataset_size, steps, 1.0 if clip_norm is None else clip_norm)
        return rel, {"source": "flags"}
    if release_file is not None and noise_multiplier is None and sample_rate is None and steps is None \
            and from_opacus is None:
        if clip_norm is not None:
            raise ReconRiskError("--clip-norm goes inside the release file (key clip_norm), not beside --release")
        return release_from_toml(release_file, events=True)
    return resolve_release(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                           clip_norm=clip_norm, release_file=release_file, from_opacus=from_opacus, options=options)
