"""The embedded control plane: the Kubernetes-compatible API server and store (``apiserver``); the
scheduler loop and the fake kubelets join it here."""
