# The image examples/replay-rayjob.yaml runs: Ray's own image (the same Ray on the head and every worker)
# with gpu-advisor and its ray extra. Build it from the repository root and push it where the cluster
# pulls from:
#   docker build -f examples/replay-ray.Dockerfile -t registry.example.com/gpu-advisor-ray:0.1.0 .
FROM rayproject/ray:2.60.0-py311
COPY --chown=ray pyproject.toml README.md LICENSE /home/ray/gpu-advisor/
COPY --chown=ray extender /home/ray/gpu-advisor/extender
COPY --chown=ray webhook /home/ray/gpu-advisor/webhook
COPY --chown=ray gpu_advisor /home/ray/gpu-advisor/gpu_advisor
RUN pip install --no-cache-dir '/home/ray/gpu-advisor[ray]' && rm -rf /home/ray/gpu-advisor
