"""The upstream backend: real kube-apiserver, etcd, kube-controller-manager and kube-scheduler, built from
Go modules by ``scripts/upstream-build``, run as local processes on 127.0.0.1 with mockgpu's kubelets."""

from mockgpu.backends.upstream.backend import UpstreamBackend
from mockgpu.backends.upstream.cluster import UpstreamCluster

__all__ = ["UpstreamBackend", "UpstreamCluster"]
