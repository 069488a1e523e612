"""The DRA scenario both live end-to-end tests apply, on the upstream backend (test_upstream_dra.py) and on
kind (test_kind_dra_e2e.py): a pod with a template claim for one GPU >= 40 GiB, a claim for a 1g.10gb and a
3g.40gb on one card (same parentUUID) and its pod, and a claim for five GPUs that fits on no node."""

from __future__ import annotations

CEL_40GI = 'device.capacity["gpu.mockgpu.io"].memory.compareTo(quantity("40Gi")) >= 0'
FIVE = ("0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling.")


def manifest(image: str = "mockgpu/workload", pull: str | None = None, mig_container_per_request: bool = False) -> str:
    """The scenario's objects as one YAML stream. ``pull``: the containers' imagePullPolicy (kind loads the image:
    ``Never``). ``mig_container_per_request``: the MIG pod has a container per request (``small``, ``large``),
    each printing its own devices, instead of one container ``w`` naming the whole claim. containerd applies
    CDI's env rule (the later ``NVIDIA_VISIBLE_DEVICES`` wins), so on kind a container sees one request only;
    mockgpu's kubelet joins them."""
    policy = f", imagePullPolicy: {pull}" if pull else ""

    def container(name: str, command: str, request: str | None = None, claim: str = "g") -> str:
        ref = f"{{name: {claim}, request: {request}}}" if request else f"{{name: {claim}}}"
        return (f"  - {{name: {name}, image: {image}{policy}, command: {command}, "
                f"resources: {{claims: [{ref}]}}}}")

    echo = '["sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES; exec sleep 600"]'
    if mig_container_per_request:
        mig = "\n".join(container(r, echo, r) for r in ("small", "large"))
    else:
        mig = container("w", echo)
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: big-gpu}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.mockgpu.io
          selectors: [{{cel: {{expression: '{CEL_40GI}'}}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: big}}
spec:
  terminationGracePeriodSeconds: 1
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: big-gpu}}]
  containers:
{container("w", '["sh", "-c", "echo NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES; exec sleep 600"]', claim="gpu")}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: migs}}
spec:
  devices:
    requests:
    - name: small
      exactly:
        deviceClassName: mig.gpu.mockgpu.io
        selectors: [{{cel: {{expression: 'device.attributes["gpu.mockgpu.io"].profile == "1g.10gb"'}}}}]
    - name: large
      exactly:
        deviceClassName: mig.gpu.mockgpu.io
        selectors: [{{cel: {{expression: 'device.attributes["gpu.mockgpu.io"].profile == "3g.40gb"'}}}}]
    constraints: [{{matchAttribute: gpu.mockgpu.io/parentUUID}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: migs}}
spec:
  terminationGracePeriodSeconds: 1
  resourceClaims: [{{name: g, resourceClaimName: migs}}]
  containers:
{mig}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: five}}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {{deviceClassName: gpu.mockgpu.io, allocationMode: ExactCount, count: 5}}
---
apiVersion: v1
kind: Pod
metadata: {{name: five}}
spec:
  resourceClaims: [{{name: g, resourceClaimName: five}}]
  containers:
{container("w", '["sleep", "600"]')}
"""
