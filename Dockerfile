# The image the manifests run: `docker build -t ghcr.io/gpu-advisor/gpu-advisor:0.1.0 .`
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY extender extender
COPY webhook webhook
COPY gpu_advisor gpu_advisor
# gcc only to build placement's compiled kernel (extender/placement/_kernel.c), then removed
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install --no-cache-dir . \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* /root/.cache
USER 65532:65532
ENTRYPOINT ["gpu-advisor"]
CMD ["serve", "--cluster=kube", "--host=0.0.0.0"]
