"""individual."""
