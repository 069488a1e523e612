"""Bring clusters up and down from a spec. Each backend is one folder implementing ``Backend``."""
