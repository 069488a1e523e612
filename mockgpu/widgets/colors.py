"""A pod's colour: the same pod name gives the same colour in every widget, run and browser."""

from __future__ import annotations

import colorsys
import hashlib

FREE = "#e5e7eb"  # a free GPU or slot
UNHEALTHY = "#111827"


def pod_color(name: str) -> str:
    """A readable mid-saturation colour from the pod's name (``namespace/name`` or bare name; hashed, not random)."""
    digest = hashlib.sha256(name.encode()).digest()
    hue = int.from_bytes(digest[:2], "big") / 65536
    light = 0.55 + (digest[2] % 16) / 100  # 0.55 .. 0.70
    sat = 0.55 + (digest[3] % 25) / 100  # 0.55 .. 0.79
    r, g, b = colorsys.hls_to_rgb(hue, light, sat)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
