"""Orchestration: the informed-adversary trial runner behind ``reconrisk audit``."""
