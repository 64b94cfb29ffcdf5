"""reconrisk: how likely is a reconstruction of a training example from a DP-SGD release?

Theory (certified bounds, accounting, calibration) imports only numpy/scipy;
the simulation layer (DP-SGD simulator, attacks) needs the ``sim`` extra (JAX)
and is imported lazily.
"""

from .errors import ReconRiskError

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
    "ReroBound": "bounds.rero",  # (= results.Bound, kept importable for one release)
    "Bound": "results",
    "kappa_from_points": "priors",
    "kappa_from_samples": "priors",
    "kappa_uniform": "priors",
    "log_kappa_coordinate_match": "priors",
    "Release": "release",
    "Segment": "release",
    "analytic_bound": "bounds.analytic",
    "analytic_calibration": "bounds.analytic",
    "eta_for_rero": "bounds.analytic",
    "ncc_bound": "bounds.analytic",
    "optimal_num_rows": "bounds.analytic",
    "reconstruction_variance": "bounds.analytic",
    "rero_mse": "bounds.analytic",
    "rero_psnr": "bounds.analytic",
    "rero_gamma_mse": "bounds.analytic",  # deprecated alias of rero_mse (one release)
    "rero_gamma_psnr": "bounds.analytic",  # deprecated alias of rero_psnr (one release)
    "selection_probability": "bounds.analytic",
    "MSELaw": "bounds.analytic_laws",
    "PSNRLaw": "bounds.analytic_laws",
    "mse_law": "bounds.analytic_laws",
    "psnr_law": "bounds.analytic_laws",
    "mse_bound": "bounds.mse",
    "MseBound": "bounds.mse",
    "rdp_mse_lower_bound": "bounds.mse",
    "dfil_bound": "bounds.mse",
    "log_iv": "mechanisms.vmf",
    "sample_vmf": "mechanisms.vmf",
    "vmf_rdp": "accounting.vmf",
    "vmf_delta": "accounting.vmf",
    "vmf_epsilon": "accounting.vmf",
    "concentration_for_epsilon": "accounting.vmf",
    "log_bayes_capacity": "bounds.capacity",
    "log_capacity_vmf": "bounds.capacity",
    "log_capacity_gaussian": "bounds.capacity",
    "rero_from_guarantee": "bounds.conversions",
    "dp_from_two_point_rero": "bounds.conversions",
    # issue 24: tightest conversions of a guarantee alone
    "rero_dp": "bounds.fdp",
    "tradeoff_dp": "bounds.fdp",
    "rero_rdp_curve": "bounds.rdp_tradeoff",
    "tradeoff_rdp_curve": "bounds.rdp_tradeoff",
    "rero_zcdp": "bounds.rdp_tradeoff",
    "tradeoff_zcdp": "bounds.rdp_tradeoff",
    "rero_vmf": "bounds.vmf_rero",
    "GuaranteeAnalysis": "bounds.guarantee",
    "EventAnalysis": "bounds.events",
    "log_kappa_uniform_ball": "priors",
    "log_kappa_gaussian": "priors",
    "closed_form_experiment": "attacks.closed_form",
    "run_reconn": "attacks.reconstructor",
    # issue 11: the certified trade-off curve and the risks read off it
    "tradeoff": "bounds.tradeoff",
    "TradeOff": "bounds.tradeoff",
    "risk": "bounds.risk",
    "RiskBound": "bounds.risk",
    "calibrate_risk": "bounds.calibrate_risk",
    "ReconRiskAccountant": "opacus",
    "make_private_with_risk": "opacus",
    # issue 14: sweeps at scale
    "load_sweep": "experiments.sweep",
    "run_sweep": "experiments.sweep",
    "ResultStore": "experiments.store",
    # issue 14: one risk report for one release; Fano's bound (Hayes, Mahloujifar & Balle 2023, App. H)
    "fano_bound": "bounds.fano",
    "risk_report": "experiments.riskreport",
    "ReportConfig": "experiments.riskreport",
    # issue 14: paper reproductions (`reconrisk reproduce`)
    "run_recipe": "experiments.recipes",
    "recipe_names": "experiments.recipes",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reconrisk' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "Bound",
    "PrivacyAnalysis",
    "analyse",
    "calibrate",
    "MSELaw",
    "PSNRLaw",
    "ReconRiskError",
    "Release",
    "Segment",
    "calibrate_noise",
    "epsilon",
    "kappa_from_points",
    "kappa_from_samples",
    "kappa_uniform",
    "log_kappa_coordinate_match",
    "noise_multiplier_for_epsilon",
    "rero_bound",
    "__version__",
    # Riess et al. 2024: analytic gradient inversion
    "analytic_bound",
    "analytic_calibration",
    "eta_for_rero",
    "mse_law",
    "ncc_bound",
    "optimal_num_rows",
    "psnr_law",
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
    # Balle, Cherubin & Hayes 2022: informed adversaries
    "closed_form_experiment",
    "dp_from_two_point_rero",
    "log_kappa_gaussian",
    "log_kappa_uniform_ball",
    "rero_from_guarantee",
    "run_reconn",
    # issue 24
    "rero_dp",
    "tradeoff_dp",
    "rero_rdp_curve",
    "tradeoff_rdp_curve",
    "rero_zcdp",
    "tradeoff_zcdp",
    "rero_vmf",
    "GuaranteeAnalysis",
    "EventAnalysis",
    # issue 11
    "tradeoff",
    "TradeOff",
    "risk",
    "calibrate_risk",
    "ReconRiskAccountant",
    "make_private_with_risk",
    # issue 14: sweeps at scale
    "load_sweep",
    "run_sweep",
    "ResultStore",
    # issue 14
    "run_recipe",
    "recipe_names",
]
