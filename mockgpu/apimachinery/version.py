"""The Kubernetes release the embedded components model (``k8s.io/apimachinery/pkg/version.Info``'s fields).

The release whose behaviour (validation texts, printers, defaults, scheduling) the API server models and whose
version the kubelets report: the upstream build's (``backends/upstream/versions.env``; a test keeps the two
equal), so the embedded and upstream backends report the release they both are. The ``-mockgpu`` suffix says
whose. kubectl prints its skew warning in ``kubectl version`` only (kubectl 1.32 warns against upstream too).
"""

KUBE_MAJOR, KUBE_MINOR, KUBE_PATCH = "1", "37", "2"
GIT_VERSION = f"v{KUBE_MAJOR}.{KUBE_MINOR}.{KUBE_PATCH}-mockgpu"
