"""Bring clusters up and down from a spec. ``base`` is the one lifecycle every backend implements (``Backend``,
``Cluster``); each backend is one folder behind it (``embedded``, ``upstream``, ``kind``, ``kubeconfig``) and what
two of them share lives in ``common``, never in another backend's folder."""
