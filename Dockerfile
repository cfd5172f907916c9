FROM python:3.11-slim
# batsched-ml: the ZeroMQ decision server (`batsched-ml serve`) for a Batsim 4.x container.
# Build: docker build -t batsched-ml .     Run: see docker-compose.yml
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
WORKDIR /opt/batsched-ml
COPY pyproject.toml README.md ./
COPY batsched_ml ./batsched_ml
RUN pip install . && useradd --create-home --uid 1000 sched
USER sched
EXPOSE 28000
# Bind on every interface of the container so that the batsim container can connect.
CMD ["batsched-ml", "serve", "-s", "tcp://*:28000", "--scheduler", "easy"]
