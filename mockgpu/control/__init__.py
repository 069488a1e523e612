"""The embedded control plane: API server and store, scheduler loop, fake kubelets and their
process runtime. Imports ``deviceplugin``, ``config``, ``gpu`` and ``sched``; nothing below
imports it."""
