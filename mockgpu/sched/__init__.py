"""The kube-scheduler model as pure functions over node/pod snapshots (no I/O, no API client).

Used by the embedded scheduler loop (``mockgpu.control``) and by the trace simulator (``mockgpu.sim``).
"""
