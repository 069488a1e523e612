"""Paths inside a real node (kind's, or an existing cluster's) that mockgpu's DaemonSets and kind's config share."""

DRIVER_DIR = "/var/lib/mockgpu/driver"  # the node's fake-driver state (in each kind node, and in the plugin container)
FAULTS_DIR = "/var/lib/mockgpu/faults"  # the injected faults beside it (mockgpu.gpu.faults), never mounted rw in pods
