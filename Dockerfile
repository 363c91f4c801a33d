# The image the manifests run: `docker build -t ghcr.io/gpu-advisor/gpu-advisor:0.1.0 .`
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY extender extender
COPY webhook webhook
COPY gpu_advisor gpu_advisor
RUN pip install --no-cache-dir . && rm -rf /root/.cache
USER 65532:65532
ENTRYPOINT ["gpu-advisor"]
CMD ["serve", "--cluster=kube", "--host=0.0.0.0"]
