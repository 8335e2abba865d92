"""Providers: wire protocols mapped onto the unified model types."""
