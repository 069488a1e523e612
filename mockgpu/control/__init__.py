"""The embedded control plane: the Kubernetes-compatible API server and store (``apiserver``),
the scheduler loop, fake kubelets and their process runtime (``kubelet``). Imports
``deviceplugin``, ``config``, ``gpu`` and ``sched``; nothing below imports it."""
