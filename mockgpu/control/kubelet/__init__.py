"""The embedded backend's fake kubelet. ``kubelet.Kubelet`` is the API-server loop of one node (Node
registration and heartbeat, pod watch, status, events, deletion; ``podsync``, ``nodestatus``, ``events``,
``apiwatch``), running the node's device plugin as a process (``pluginproc``) and publishing its GPU state
(``publisher``; ``mockgpu gpu-state-publisher`` in ``publish_command`` for kind). Below it: the device manager (the
kubelet side of the device plugin API), the process runtime that runs containers, and the pod
worker that drives one bound pod through admission, containers, restarts and status.

Public API for the kubelet loop:
* ``devicemanager.DeviceManager(plugin_dir)``: ``start()``, ``stop()``, ``node_resources()``
  -> (capacity, allocatable), ``allocate(pod_uid, container, limits) -> ContainerAllocation``
  (raises ``AdmissionError``), ``get_allocation``, ``pre_start``, ``remove_pod``, ``pod_devices``.
* ``runtime.ProcessRuntime(root)``: ``start(ContainerSpec) -> ContainerStatus``, ``status``,
  ``wait``, ``stop``, ``stop_pod``, ``stop_all``, ``logs``; restart rules in ``restart``; every
  container runs in the sandbox of ``sandbox`` (bubblewrap, or its fallback layers).
* ``podworker.PodWorker(pod, node_name=, runtime=, devices=, on_status=, on_event=)``:
  ``start()``, ``status()`` (the Pod ``status`` object), ``terminate(grace)``.
"""
