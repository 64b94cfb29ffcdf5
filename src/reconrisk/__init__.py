"""reconrisk: how likely is a reconstruction of a training example from a DP-SGD release?

Theory (certified bounds, accounting, calibration) imports only numpy/scipy;
the simulation layer (DP-SGD simulator, attacks) needs the ``sim`` extra (JAX)
and is imported lazily.
"""

import importlib

from . import _aliases
from .errors import ReconRiskError

_aliases.install()  # earlier releases' module paths (reconrisk.bounds.*, reconrisk.opacus, …)

__version__ = "0.1.0"

# Names loaded on first use (PEP 562), so that `import reconrisk` — and with it
# every CLI command — does not pay for scipy.stats and friends up front.
_LAZY = {
    # the core API, also loaded on first use: `reconrisk report` starts its Monte-Carlo draws (numpy only)
    # before scipy is imported, and `import reconrisk.errors` costs nothing
    "PrivacyAnalysis": "api",
    "analyse": "api",
    "calibrate": "api",
    "calibrate_noise": "api",
    "epsilon": "api",
    "noise_multiplier_for_epsilon": "api",
    "rero_bound": "api",
    "ReroBound": "measures.rero",  # (= results.Bound, kept importable for one release)
    "Bound": "results",
    "kappa_from_points": "priors",
    "kappa_from_samples": "priors",
    "kappa_uniform": "priors",
    "log_kappa_coordinate_match": "priors",
    "Release": "release",
    "Segment": "release",
    "analytic_bound": "theory.analytic",
    "analytic_calibration": "theory.analytic",
    "eta_for_rero": "theory.analytic",
    "ncc_bound": "theory.analytic",
    "optimal_num_rows": "theory.analytic",
    "reconstruction_variance": "theory.analytic",
    "rero_mse": "theory.analytic",
    "rero_psnr": "theory.analytic",
    "rero_gamma_mse": "theory.analytic",  # deprecated alias of rero_mse (one release)
    "rero_gamma_psnr": "theory.analytic",  # deprecated alias of rero_psnr (one release)
    "selection_probability": "theory.analytic",
    "MSELaw": "theory.analytic_laws",
    "PSNRLaw": "theory.analytic_laws",
    "mse_law": "theory.analytic_laws",
    "psnr_law": "theory.analytic_laws",
    "mse_bound": "theory.mse",
    "MseBound": "theory.mse",
    "rdp_mse_lower_bound": "theory.mse",
    "dfil_bound": "theory.mse",
    "log_iv": "mechanisms.vmf",
    "sample_vmf": "mechanisms.vmf",
    "vmf_rdp": "accounting.vmf",
    "vmf_delta": "accounting.vmf",
    "vmf_epsilon": "accounting.vmf",
    "concentration_for_epsilon": "accounting.vmf",
    "log_bayes_capacity": "theory.capacity",
    "log_capacity_vmf": "theory.capacity",
    "log_capacity_gaussian": "theory.capacity",
    "rero_from_guarantee": "measures.conversions",
    "dp_from_two_point_rero": "measures.conversions",
    # the tightest conversions of a guarantee alone ((ε, δ)-DP, RDP, zCDP, VMF) to ReRo and trade-off curves
    "rero_dp": "measures.fdp",
    "tradeoff_dp": "measures.fdp",
    "rero_rdp_curve": "measures.rdp_tradeoff",
    "tradeoff_rdp_curve": "measures.rdp_tradeoff",
    "rero_zcdp": "measures.rdp_tradeoff",
    "tradeoff_zcdp": "measures.rdp_tradeoff",
    "rero_vmf": "measures.vmf_rero",
    "GuaranteeAnalysis": "analysis.guarantee",
    "EventAnalysis": "analysis.events",
    "log_kappa_uniform_ball": "priors",
    "log_kappa_gaussian": "priors",
    "closed_form_experiment": "attacks.closed_form",
    "run_reconn": "attacks.reconstructor",
    # the certified trade-off curve, the risk measures read off it, and calibration to them
    "tradeoff": "api",
    "TradeOff": "measures.tradeoff",
    "risk": "api",
    "RiskBound": "measures.risk",
    "calibrate_risk": "analysis.calibrate_risk",
    "ReconRiskAccountant": "integrations.opacus",
    "make_private_with_risk": "integrations.opacus",
    # sweeps at scale
    "load_sweep": "experiments.sweep",
    "run_sweep": "experiments.sweep",
    "ResultStore": "experiments.store",
    # one risk report for one release; Fano's bound (Hayes, Mahloujifar & Balle 2023, App. H)
    "fano_bound": "theory.fano",
    "risk_report": "experiments.riskreport",
    "ReportConfig": "experiments.riskreport",
    # paper reproductions (`reconrisk reproduce`)
    "run_recipe": "reproduce.recipes",
    "recipe_names": "reproduce.recipes",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reconrisk' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

# The public names, grouped by concept (each group's order: what a reader reaches for first).
__all__ = [
    "__version__",
    "ReconRiskError",
    # one result shape: every certified number is a Bound
    "Bound",
    # a training run, its one analysis, and the questions it answers (ε, ReRo, trade-off curve, risk measures)
    "Release",
    "Segment",
    "PrivacyAnalysis",
    "EventAnalysis",
    "GuaranteeAnalysis",
    "analyse",
    "epsilon",
    "rero_bound",
    "tradeoff",
    "TradeOff",
    "risk",
    # calibration: the one calibrator, and its deprecated dictionary views
    "calibrate",
    "noise_multiplier_for_epsilon",
    "calibrate_noise",
    "calibrate_risk",
    # priors: the baseline success probability κ
    "kappa_from_points",
    "kappa_from_samples",
    "kappa_uniform",
    "log_kappa_coordinate_match",
    "log_kappa_gaussian",
    "log_kappa_uniform_ball",
    # conversions of a guarantee alone ((ε, δ)-DP, RDP, zCDP, VMF) to ReRo and trade-off curves
    "rero_from_guarantee",
    "dp_from_two_point_rero",
    "rero_dp",
    "tradeoff_dp",
    "rero_rdp_curve",
    "tradeoff_rdp_curve",
    "rero_zcdp",
    "tradeoff_zcdp",
    "rero_vmf",
    # Riess et al. 2024: analytic gradient inversion
    "analytic_bound",
    "analytic_calibration",
    "eta_for_rero",
    "mse_law",
    "MSELaw",
    "ncc_bound",
    "optimal_num_rows",
    "psnr_law",
    "PSNRLaw",
    "reconstruction_variance",
    "rero_mse",
    "rero_psnr",
    "selection_probability",
    # Guo, Karrer, Chaudhuri & van der Maaten 2022: MSE lower bounds
    "MseBound",
    "dfil_bound",
    "mse_bound",
    "rdp_mse_lower_bound",
    # Biswas et al. 2024: VMF mechanism and Bayes' capacity
    "concentration_for_epsilon",
    "log_bayes_capacity",
    "log_capacity_gaussian",
    "log_capacity_vmf",
    "log_iv",
    "sample_vmf",
    "vmf_delta",
    "vmf_epsilon",
    "vmf_rdp",
    # Balle, Cherubin & Hayes 2022: informed adversaries (attacks)
    "closed_form_experiment",
    "run_reconn",
    # Opacus
    "ReconRiskAccountant",
    "make_private_with_risk",
    # sweeps at scale
    "load_sweep",
    "run_sweep",
    "ResultStore",
    # paper reproductions (`reconrisk reproduce`)
    "run_recipe",
    "recipe_names",
]
