"""Attacks (simulation layer; needs the sim extra)."""
