"""The embedded backend's fake kubelet, minus its API-server loop: the device manager (the
kubelet side of the device plugin API) and the process runtime that runs containers.

Public API for the kubelet loop:
* ``DeviceManager(plugin_dir)``: ``start()``, ``stop()``, ``node_resources()``,
  ``allocate(pod_uid, container, limits) -> ContainerAllocation`` (raises ``AdmissionError``),
  ``get_allocation``, ``pre_start``, ``remove_pod``, ``pod_devices``.
* ``ProcessRuntime(root)``: ``start(ContainerSpec) -> ContainerStatus``, ``status``, ``wait``,
  ``stop``, ``stop_pod``, ``stop_all``, ``logs``; restart decisions in ``restart``.
"""
