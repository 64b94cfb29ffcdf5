"""reconrisk: how likely is a reconstruction of a training example from a DP-SGD release?

The face of the package: a few names (``__all__``), each loaded on first use (PEP 562), so ``import reconrisk``
imports neither numpy nor scipy. Describe what was run (:class:`Release`), analyse it once (:func:`analyse`: its
answer gives ``epsilon``, ``delta``, ``rero``, ``tradeoff``, ``risk``, ``gdp_mu``), calibrate it
(:func:`calibrate`), or read the papers' own bounds. The implementation lives under ``reconrisk._src`` (private:
its paths may change); names and module paths of earlier releases keep working with a ``DeprecationWarning``
at the user's line that names the new spelling.
"""

import importlib as _importlib
import importlib.util as _importlib_util

from ._src import __version__, _aliases
from ._src._deprecated import warn_once_per_statement as _warn_once
from .errors import ReconRiskError

_aliases.install()  # reconrisk.<private path> → reconrisk._src.<path>, and earlier releases' renames

# name → the module under reconrisk._src that defines it (loaded on first use)
_LAZY = {
    # what was run, its one analysis, and every certified number's shape
    "Release": "release", "Segment": "release", "Bound": "results",
    # its parts: a step is a mechanism under a sampler (the rest of the registry: reconrisk._src.mechanisms)
    "Step": "mechanisms.base", "Gaussian": "mechanisms.gaussian", "Laplace": "mechanisms.laplace",
    "VonMisesFisher": "mechanisms.von_mises_fisher", "Poisson": "mechanisms.samplers",
    "FixedBatch": "mechanisms.samplers", "NoAmplification": "mechanisms.samplers",
    "analyse": "api", "GuaranteeAnalysis": "analysis.guarantee",
    "TradeOff": "measures.tradeoff", "RiskBound": "measures.risk",
    # the accountant's drop-in (a float) and the one calibrator
    "epsilon": "api", "calibrate": "analysis.calibrate", "Calibration": "analysis.calibrate",
    # the prior: the baseline success probability κ
    "kappa_uniform": "priors", "kappa_from_points": "priors", "kappa_from_samples": "priors",
    "log_kappa_uniform_ball": "priors", "log_kappa_gaussian": "priors", "log_kappa_coordinate_match": "priors",
    # one risk report for one release
    "risk_report": "experiments.riskreport", "ReportConfig": "experiments.riskreport",
    # the papers' own bounds: Riess et al. 2024 (laws, bound), Guo et al. 2022 (MSE), Biswas et al. 2024 (VMF,
    # capacity), Balle, Cherubin & Hayes 2022 (two-point ReRo → DP)
    "mse_law": "theory.analytic_laws", "psnr_law": "theory.analytic_laws", "analytic_bound": "theory.analytic",
    "mse_bound": "theory.mse", "vmf_epsilon": "accounting.vmf", "concentration_for_epsilon": "accounting.vmf",
    "log_bayes_capacity": "theory.capacity", "log_capacity_vmf": "theory.capacity",
    "dp_from_two_point_rero": "measures.conversions",
    # sweeps at scale and the papers' reproductions
    "run_sweep": "experiments.sweep", "run_recipe": "reproduce.recipes",
    # the tutorials' data
    "load_digits": "data",
}

_ANALYSIS = "reconrisk.analyse(release).{}"
_GUARANTEE = "reconrisk.GuaranteeAnalysis({}).{}"
# names of earlier releases: name → (module under reconrisk._src that defines it, the spelling to use now)
_DEPRECATED = {
    "PrivacyAnalysis": ("api", "reconrisk.analyse(release)"),
    "EventAnalysis": ("analysis.events", "reconrisk.analyse(event)"),
    "rero_bound": ("api", _ANALYSIS.format("rero(kappa)")),
    "ReroBound": ("measures.rero", "reconrisk.Bound"),
    "tradeoff": ("api", _ANALYSIS.format("tradeoff(alphas)")),
    "risk": ("api", _ANALYSIS.format("risk(measure)")),
    "noise_multiplier_for_epsilon": ("api", "reconrisk.calibrate('epsilon', target, delta=...).noise_multiplier"),
    "calibrate_noise": ("api", "reconrisk.calibrate('reconstruction', target, ...)"),
    "calibrate_risk": ("analysis.calibrate_risk", "reconrisk.calibrate(measure, target, ...)"),
    "rero_from_guarantee": ("measures.conversions", _GUARANTEE.format("kind, ...", "rero(kappa)")),
    "rero_dp": ("measures.fdp", _GUARANTEE.format("'dp', epsilon=..., delta=...", "rero(kappa)")),
    "tradeoff_dp": ("measures.fdp", _GUARANTEE.format("'dp', epsilon=..., delta=...", "tradeoff(alphas)")),
    "rero_rdp_curve": ("measures.rdp_tradeoff", _GUARANTEE.format("'rdp', ...", "rero(kappa)")),
    "tradeoff_rdp_curve": ("measures.rdp_tradeoff", _GUARANTEE.format("'rdp', ...", "tradeoff(alphas)")),
    "rero_zcdp": ("measures.rdp_tradeoff", _GUARANTEE.format("'zcdp', rho=...", "rero(kappa)")),
    "tradeoff_zcdp": ("measures.rdp_tradeoff", _GUARANTEE.format("'zcdp', rho=...", "tradeoff(alphas)")),
    "rero_vmf": ("measures.vmf_rero", "reconrisk.GuaranteeAnalysis.vmf(...).rero(kappa)"),
    "ReconRiskAccountant": ("integrations.opacus", "reconrisk.integrations.opacus.ReconRiskAccountant"),
    "make_private_with_risk": ("integrations.opacus", "reconrisk.integrations.opacus.make_private_with_risk"),
    "MSELaw": ("theory.analytic_laws", "reconrisk.mse_law(...)"),
    "PSNRLaw": ("theory.analytic_laws", "reconrisk.psnr_law(...)"),
    "MseBound": ("theory.mse", "reconrisk.mse_bound(...)"),
    **{n: ("theory.analytic", None) for n in (
        "analytic_calibration", "eta_for_rero", "ncc_bound", "optimal_num_rows", "reconstruction_variance",
        "rero_mse", "rero_psnr", "rero_gamma_mse", "rero_gamma_psnr", "selection_probability")},
    **{n: ("theory.mse", None) for n in ("rdp_mse_lower_bound", "dfil_bound")},
    **{n: ("mechanisms.vmf", None) for n in ("log_iv", "sample_vmf")},
    **{n: ("accounting.vmf", None) for n in ("vmf_rdp", "vmf_delta")},
    "log_capacity_gaussian": ("theory.capacity", None),
    "closed_form_experiment": ("attacks.closed_form", None),
    "run_reconn": ("attacks.reconstructor", None),
    "ResultStore": ("experiments.store", None),
    "load_sweep": ("experiments.sweep", None),
    "fano_bound": ("theory.fano", None),
    "recipe_names": ("reproduce.recipes", None),
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_importlib.import_module(f"._src.{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _DEPRECATED:
        module, instead = _DEPRECATED[name]
        instead = instead or f"reconrisk._src.{module}.{name} (internal: no longer part of the public face)"
        # once per statement: ``from reconrisk import name`` reads it twice (the import system's hasattr, then the name)
        _warn_once(f"reconrisk.{name} is deprecated and will be removed in a later release; use {instead}",
                   f"reconrisk.{name}")
        return getattr(_importlib.import_module(f"._src.{module}", __name__), name)  # not cached: warns each time
    if _importlib_util.find_spec(f"{__name__}._src.{name}") is not None:  # an old module path: the alias rule
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'reconrisk' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


# The face: every name a user of one of the papers needs (DESIGN.md, "The face"; docs/reference/python.md).
__all__ = [
    # the package and its one exception
    "__version__", "ReconRiskError",
    # what was run, and its parts: a step is a mechanism under a sampler (analyse([Step(...), ...]))
    "Release", "Segment", "Step", "Gaussian", "Laplace", "VonMisesFisher", "Poisson", "FixedBatch", "NoAmplification",
    # its one analysis (a release, a dp_accounting event, or a guarantee alone)
    "analyse", "GuaranteeAnalysis",
    # the shapes of its answers: every certified number is a Bound
    "Bound", "TradeOff", "RiskBound",
    # the accountant's drop-in (a float) and the one calibrator
    "epsilon", "calibrate", "Calibration",
    # the prior: the baseline success probability κ
    "kappa_uniform", "kappa_from_points", "kappa_from_samples", "log_kappa_uniform_ball", "log_kappa_gaussian",
    "log_kappa_coordinate_match",
    # one risk report for one release
    "risk_report", "ReportConfig",
    # Riess et al. 2024: the analytic attack's laws and bound
    "mse_law", "psnr_law", "analytic_bound",
    # Guo, Karrer, Chaudhuri & van der Maaten 2022: the MSE lower bound
    "mse_bound",
    # Biswas et al. 2024: the VMF mechanism's ε and Bayes' capacity
    "vmf_epsilon", "concentration_for_epsilon", "log_bayes_capacity", "log_capacity_vmf",
    # Balle, Cherubin & Hayes 2022: a two-point ReRo as a DP guarantee
    "dp_from_two_point_rero",
    # sweeps at scale and the papers' reproductions
    "run_sweep", "run_recipe",
    # the tutorials' data (a subset of scikit-learn's digits, shipped with the package)
    "load_digits",
]
