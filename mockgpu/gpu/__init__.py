"""The fake hardware: GPU catalog, MIG placement, device identities, the memory ledger ("driver"),
the fake CUDA API and fake ``nvidia-smi``. Knows nothing about Kubernetes."""
