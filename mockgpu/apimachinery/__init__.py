"""What every Kubernetes component of the kit shares, as upstream's ``k8s.io/apimachinery`` is shared: names and
their rules, label selectors, quantities, time formats. A leaf room: it imports nothing else of mockgpu (checked by
``tests/test_imports.py``); the API server, controllers, kubelet, scheduler and ``sched`` import it."""
