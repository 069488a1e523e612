# The lab image: JupyterLab + mockgpu[lab] + its workload sandbox (bubblewrap) + the labs, for learners who are not
# on a Linux machine of their own: Docker Desktop on a Mac or Windows, WSL2, a workshop's JupyterHub, Binder, a
# devcontainer. One recipe serves them all (binder/Dockerfile and .devcontainer/devcontainer.json point here).
#
#   docker build -f lab.Dockerfile -t mockgpu-lab .          # from python:3.11-slim (needs Docker Hub and PyPI)
#   docker run --rm -p 8888:8888 mockgpu-lab                  # open the URL it prints (token included)
#
# scripts/lab-image builds it offline on this project's local base (BASE=mockgpu/python-base:bookworm, made by
# scripts/kind-images from Debian packages) and, where scripts/upstream-build has built them, carries the upstream
# control plane's binaries (UPSTREAM, an image holding them; see below), so MOCKGPU_BACKEND=upstream works inside
# with no Go.
#
# It runs as a non-root user (NB_USER, uid NB_UID = 1000, the names Binder passes as build arguments) whose HOME
# holds a writable copy of labs/; mockgpu itself (package, cluster specs, pristine labs) is root-owned in
# /opt/mockgpu. Under Docker's default security options (no --privileged, no unconfined profiles) bubblewrap cannot
# build its namespaces, and the kubelets' sandbox falls back to the strongest confinement the container allows;
# `mockgpu doctor` and the labs' first cell say which, in one line.
#
# What starts it: `docker run` uses the CMD below (`mockgpu lab`: token auth on, the URL printed with the token;
# JUPYTER_TOKEN, if set, is the token). A JupyterHub spawner and Binder replace the command with
# `jupyterhub-singleuser` or `jupyter notebook`/`jupyter lab` and authenticate through the hub; both are installed.
ARG BASE=python:3.11-slim
# UPSTREAM: an image whose /upstream/ holds <k8s-version>/bin/{etcd,kube-apiserver,...} (scripts/lab-image makes
# mockgpu/upstream-bin:<version> from .cache/upstream); the default stage below holds nothing.
ARG UPSTREAM=no-upstream

FROM ${BASE} AS no-upstream
RUN mkdir -p /upstream

FROM ${UPSTREAM} AS upstream

FROM ${BASE}
ARG BASE
ARG NB_USER=learner
ARG NB_UID=1000
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8
USER root

# bubblewrap (the workload sandbox where namespaces are allowed) and tini (PID 1: reaps what a stopped kernel's
# cluster leaves behind). The local base has both and no apt; python:3.11-slim gets them from Debian.
RUN if ! command -v bwrap >/dev/null 2>&1 || ! command -v tini >/dev/null 2>&1; then \
      command -v apt-get >/dev/null 2>&1 || { echo "lab.Dockerfile: the base $BASE has no bwrap/tini and no apt-get" \
        "to install them (rebuild the local base: docker rmi mockgpu/python-base:bookworm; scripts/kind-images" \
        "python-base)" >&2; exit 1; }; \
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        bubblewrap tini >/dev/null && rm -rf /var/lib/apt/lists/*; \
    fi \
    && (getent passwd "$NB_UID" >/dev/null || useradd --create-home --uid "$NB_UID" --user-group --shell /bin/bash \
        "$NB_USER")

# One virtualenv at /opt/venv on either base (the local base has one without pip).
RUN [ -x /opt/venv/bin/python ] || python3 -m venv --without-pip /opt/venv; \
    /opt/venv/bin/python -m pip --version >/dev/null 2>&1 || /opt/venv/bin/python -m ensurepip >/dev/null

# The dependencies first, in their own layer (a change to mockgpu's code does not reinstall JupyterLab):
# mockgpu[lab] (JupyterLab, the widgets, the simulator) and [nbcheck] (nbval: the labs' solutions as tests), the
# single-user server a JupyterHub spawner runs (jupyterhub-singleuser; its major version should match the hub's, see
# docs/workshop-hub.md) and the notebook front end Binder may start. A stub package (and an empty README: the real one
# changes often and would rebuild this layer) stands in for mockgpu while they install.
COPY pyproject.toml /opt/mockgpu/
RUN mkdir -p /opt/mockgpu/mockgpu && touch /opt/mockgpu/mockgpu/__init__.py /opt/mockgpu/README.md \
    && python -m pip install -q "/opt/mockgpu[lab,nbcheck]" "jupyterhub>=5,<6" "notebook>=7,<8" "setuptools>=77" wheel \
    && python -m pip uninstall -y -q mockgpu && rm -rf /opt/mockgpu/mockgpu /opt/mockgpu/build /opt/mockgpu/README.md \
    && python -c "import kubernetes, os, shutil; shutil.rmtree(os.path.join(os.path.dirname(kubernetes.__file__), 'aio'))"

# mockgpu itself, editable: the labs find clusters/ beside the package (mockgpu.widgets.labkit.REPO), and the
# upstream backend its binaries in /opt/mockgpu/.cache/upstream (mockgpu.backends.upstream.binaries).
COPY README.md /opt/mockgpu/
COPY mockgpu /opt/mockgpu/mockgpu
COPY clusters /opt/mockgpu/clusters
COPY labs /opt/mockgpu/labs
COPY --from=upstream /upstream/ /opt/mockgpu/.cache/upstream/
# Then: JupyterLab's autosave off for every way the image starts (mockgpu lab passes the same override; a hub and
# Binder start JupyterLab themselves), so a lab changes on disk only when the learner saves; the settings folder
# mockgpu lab passes, made now (the learner cannot write into /opt/venv); kubectl on PATH when the upstream
# binaries came along; and the learner's own copy of the labs.
RUN python -m pip install -q --no-deps --no-build-isolation -e /opt/mockgpu \
    && mkdir -p /opt/venv/share/jupyter/lab/settings \
    && python -c "import json; from mockgpu.commands.lab import OVERRIDES; print(json.dumps(OVERRIDES, indent=1))" \
        > /opt/venv/share/jupyter/lab/settings/overrides.json \
    && python -c "from mockgpu.commands.lab import settings_dir; settings_dir()" \
    && { for k in /opt/mockgpu/.cache/upstream/*/bin/kubectl; do \
           if [ -x "$k" ]; then ln -sf "$k" /usr/local/bin/kubectl; fi; done; } \
    && cp -r /opt/mockgpu/labs "/home/$NB_USER/labs" && chown -R "$NB_UID:$NB_UID" "/home/$NB_USER"

LABEL org.opencontainers.image.title="mockgpu-lab" \
      org.opencontainers.image.description="mockgpu labs: JupyterLab, fake GPU Kubernetes clusters, the labs" \
      org.opencontainers.image.source="mockgpu checkout"
USER ${NB_UID}
ENV HOME=/home/${NB_USER} USER=${NB_USER}
WORKDIR /home/${NB_USER}
EXPOSE 8888
ENTRYPOINT ["tini", "-g", "--"]
# The learner's copy of the labs in HOME; --port 8888: the port `docker run -p` publishes, fixed, so the printed URL
# is the one to open. (A shell for $HOME: devcontainers may start it in another working directory.)
CMD ["/bin/sh", "-c", "exec mockgpu lab --ip 0.0.0.0 --port 8888 --no-browser --labs \"$HOME/labs\""]
