# The mockgpu image the kind backend runs as its device-plugin DaemonSet (and that workloads may use).
# Built from this checkout by `mockgpu up --backend kind`, tagged with the package version, e.g.
#   docker build -t mockgpu:0.1.0 .
# never :latest (a :latest tag implies imagePullPolicy Always, and kind-loaded images cannot be pulled).
# Runs as root on purpose: the device plugin creates its socket in the kubelet's hostPath
# /var/lib/kubelet/device-plugins.
# BASE: the public python:3.11-slim by default; where no registry can be reached, scripts/kind-images
# builds a local one from Debian packages (mockgpu/python-base:bookworm) and passes it here.
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# Only what the package build needs (see .dockerignore); the package data (protos, catalogs) is inside mockgpu/.
COPY pyproject.toml README.md ./
COPY mockgpu ./mockgpu
# Runtime dependencies only (the notebook extra stays out). Three trims keep the image under 250 MB instead of
# 360: the kubernetes client's asyncio copy (kubernetes/aio, ~68 MB since client 35; mockgpu uses the sync
# client only), the CEL stack (cel-python and what only it needs: the embedded API server and scheduler
# evaluate DRA selectors, nothing the image runs does) — tests/backends/test_image.py checks both — and
# pip/setuptools once installed (a base without pip, like scripts/kind-images' local one, gets it from
# ensurepip for this layer only).
RUN (python -m pip --version >/dev/null 2>&1 || python -m ensurepip >/dev/null) && python -m pip install . \
    && cd / && rm -rf /src \
    && python -c "import kubernetes, os, shutil; shutil.rmtree(os.path.join(os.path.dirname(kubernetes.__file__), 'aio'))" \
    && python -m pip uninstall -y -q cel-python google-re2 pendulum lark jmespath \
    && python -m pip uninstall -y -q pip setuptools wheel

WORKDIR /
LABEL org.opencontainers.image.title="mockgpu" \
      org.opencontainers.image.description="mockgpu fake GPU device plugin, nvidia-smi and workloads" \
      org.opencontainers.image.source="mockgpu checkout"
# The DaemonSet gives the full command; this default just shows the version.
CMD ["mockgpu", "--help"]
