# The image the install runs (the Helm chart's default: ghcr.io/gpu-advisor/gpu-advisor:<appVersion>).
# Build and push it yourself (docs/install/cluster.md, "The image"):
#   docker build -t ghcr.io/<you>/gpu-advisor:0.1.0 . && docker push ghcr.io/<you>/gpu-advisor:0.1.0
# Reproducible: the base is pinned to a patch release (pin its digest too with
# --build-arg PYTHON=python:3.11.14-slim-bookworm@sha256:<digest>), every Python package to the
# version in requirements.lock, and the build leaves no compiler, pip or cache in the final image.
ARG PYTHON=python:3.11.14-slim-bookworm

FROM ${PYTHON} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE requirements.lock ./
COPY extender extender
COPY webhook webhook
COPY gpu_advisor gpu_advisor
# Everything goes into one virtual environment that the final stage copies whole; pip itself is
# removed from it once the install is done. gcc builds placement's compiled kernel
# (extender/placement/_kernel.c) here, in the build stage only.
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
 && python -m venv /opt/gpu-advisor \
 && /opt/gpu-advisor/bin/pip install --constraint requirements.lock . \
 && /opt/gpu-advisor/bin/pip uninstall --yes pip

FROM ${PYTHON}
# The base image's own pip and setuptools are build tools too: gone from the final layer.
RUN rm -rf /usr/local/lib/python3.11/site-packages/pip* /usr/local/lib/python3.11/site-packages/setuptools* \
           /usr/local/bin/pip* /root/.cache
COPY --from=build /opt/gpu-advisor /opt/gpu-advisor
COPY LICENSE /usr/share/doc/gpu-advisor/LICENSE
ENV PATH=/opt/gpu-advisor/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# Non-root (the manifests run it as 65532 with a read-only root filesystem); the node agent's
# DaemonSet overrides this with a powerless root (manifests/agent/daemonset.yaml says why).
USER 65532:65532
ENTRYPOINT ["gpu-advisor"]
CMD ["serve", "--cluster=kube", "--host=0.0.0.0"]
