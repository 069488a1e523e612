"""The fake hardware: GPU catalog, MIG placement, device identities, the memory ledger ("driver"),
the fake CUDA API and fake ``nvidia-smi``. Knows nothing about Kubernetes.

Modules: ``catalog`` (models and MIG profiles, data in ``data/gpus.json``), ``mig`` (layout
validation and placement), ``uuids`` (GPU/MIG UUIDs, PCI bus ids), ``inventory`` (a node's GPUs),
``ledger`` and ``driver`` (the per-node driver directory: memory, processes, health),
``visibility`` (NVIDIA_/CUDA_VISIBLE_DEVICES), ``cuda`` (what workloads call), ``smi`` (nvidia-smi).
"""
