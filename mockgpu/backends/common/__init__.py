"""What the backends share, so no backend imports another (``tests/test_imports.py``):

- local clusters (embedded, upstream): ``state`` (the state dir under ``$MOCKGPU_HOME``), ``kubeconfig`` (writing
  and removing a cluster's entries; a client for it), ``spec`` (resolving a spec), ``process`` (liveness of the
  detached daemons, their last log line), ``controlplane`` (mockgpu's kubelets, scheduler loop and controllers);
- the real kube-scheduler's results (upstream, kind): ``schedlog`` (its JSON log) and ``recorder`` (the
  ``mockgpu.io/*-result`` annotations written from it);
- real clusters (kind, kubeconfig): ``run`` (the external tools, named steps), ``manifests`` and ``dramanifests``
  (the device plugin's and the DRA driver's objects), ``images`` (mockgpu's own image), ``waitgpus`` (until the
  nodes advertise GPUs), ``nodepaths`` (paths inside a node).
"""
