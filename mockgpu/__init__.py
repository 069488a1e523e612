"""mockgpu: a mock-GPU Kubernetes testbed and teaching kit."""
