"""Compatibility module: the audit now lives in :mod:`.audit` (settings, bounds, results) and :mod:`.trials` (the trial loop)."""

from __future__ import annotations

from .audit import (  # noqa: F401
    ATTACKS,
    AuditSetting,
    Certificate,
    SettingResult,
    calibrated_settings,
    certify,
    run_audit,
    run_setting,
    total_trials,
)
from .trials import DEFAULT_KNOWN_SIZE, PRIOR_KINDS, draw_priors, run_trials, split_dataset  # noqa: F401
