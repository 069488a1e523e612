"""Data files of the hardware model (a package so the JSON ships in wheels)."""
