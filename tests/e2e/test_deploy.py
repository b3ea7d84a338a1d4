"""Offline checks of the deployment files (deploy/k8s, Dockerfile) against the code they deploy.

No cluster and no Docker: every manifest is loaded with PyYAML and checked for the mistakes that
would break a deployment while still applying cleanly (a port or label that does not match, a
probe on the wrong port, an address with no Service behind it, a config file that would not
validate, a secret key that does not exist, a connection pool that would exhaust PostgreSQL).
"""

from __future__ import annotations

import copy
import math
import os
import re
import tomllib
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, Literal, cast, get_args
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from pydantic import BaseModel, SecretStr

from tests import REPO_ROOT
from tribrid import auth
from tribrid.config import ServicesConfig, TriBridConfig

Manifest = dict[str, Any]
Component = Literal["fusion", "vector", "sparse", "graph", "indexer"]

ROOT = REPO_ROOT
K8S = ROOT / "deploy" / "k8s"
SECRET_EXAMPLE = K8S / "secret.example.yaml"
TLS_SECRET = "tribrid-tls"  # tls.crt, tls.key and ca.crt (deploy/README.md)
DOCKERFILE = ROOT / "Dockerfile"

COMPONENTS: tuple[Component, ...] = get_args(Component)
AUTOSCALED: tuple[Component, ...] = ("fusion", "vector", "sparse", "graph")
MODEL_HOLDERS: tuple[Component, ...] = ("vector", "indexer")  # load the embedding model
# the Dockerfile's service targets, in its order
COMPONENTS_BY_IMAGE: tuple[Component, ...] = ("vector", "sparse", "graph", "fusion", "indexer")
POSTGRES_CLIENTS: tuple[Component, ...] = ("fusion", "vector", "sparse", "graph", "indexer")
# pools of search_pool_max_size: the legs, and the gateway reading its answers' content
SEARCH_POOLS: tuple[Component, ...] = ("fusion", "vector", "sparse", "graph")
NEO4J_CLIENTS: tuple[Component, ...] = ("graph", "indexer")
WORKLOAD_KINDS = ("Deployment", "StatefulSet")
PART_OF = "tribrid"
# The Kubernetes release whose schemas (shipped inside kubernetes-validate: no network) the
# manifests must satisfy: the oldest one deploy/README.md supports.
KUBERNETES_VERSION = "1.31"


# --- loading -------------------------------------------------------------------------------------


def _load(path: Path) -> list[Manifest]:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    for doc in docs:
        assert isinstance(doc, dict), f"{path.name}: a document is not a mapping"
    return cast(list[Manifest], docs)


@cache
def _kustomization() -> Manifest:
    (doc,) = _load(K8S / "kustomization.yaml")
    return doc


@cache
def _resources() -> tuple[Manifest, ...]:
    """Every document that `kubectl apply -k deploy/k8s` applies."""
    return tuple(doc for name in _kustomization()["resources"] for doc in _load(K8S / name))


def _of_kind(kind: str) -> list[Manifest]:
    return [doc for doc in _resources() if doc["kind"] == kind]


def _get(kind: str, name: str) -> Manifest:
    found = [doc for doc in _of_kind(kind) if doc["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name!r}, found {len(found)}"
    return found[0]


def _workloads() -> list[Manifest]:
    return [doc for doc in _resources() if doc["kind"] in WORKLOAD_KINDS]


def _deployment(component: Component) -> Manifest:
    return _get("Deployment", f"tribrid-{component}")


def _pod_spec(workload: Manifest) -> Manifest:
    spec: Manifest = workload["spec"]["template"]["spec"]
    return spec


def _pod_labels(workload: Manifest) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def _containers(workload: Manifest) -> list[Manifest]:
    containers: list[Manifest] = _pod_spec(workload)["containers"]
    return containers


def _server(component: Component) -> Manifest:
    containers = _containers(_deployment(component))
    assert len(containers) == 1, f"tribrid-{component}: expected one container"
    return containers[0]


def _env(container: Manifest) -> dict[str, Manifest]:
    return {var["name"]: var for var in container.get("env", [])}


def _secret_example() -> Manifest:
    (doc,) = _load(SECRET_EXAMPLE)
    return doc


def _secret_values() -> dict[str, str]:
    values: dict[str, str] = _secret_example()["stringData"]
    return values


def _configmap_toml() -> str:
    text: str = _get("ConfigMap", "tribrid-config")["data"]["tribrid.toml"]
    return text


def _quantity(value: str | int | float) -> float:
    """A Kubernetes resource quantity (`500m`, `2`, `1536Mi`, `1Gi`) as a number."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?", str(value))
    assert match, f"not a resource quantity: {value!r}"
    scale = {
        None: 1,
        "m": 1e-3,
        "k": 1e3,
        "M": 1e6,
        "G": 1e9,
        "T": 1e12,
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
    }
    return float(match.group(1)) * scale[match.group(2)]


def _host_port(address: str) -> tuple[str, int]:
    """`tribrid-vector:50061`, `dns:///tribrid-vector:50061` or `bolt://neo4j:7687` → (host, port)."""
    address = address.removeprefix("dns:///")
    parts = urlsplit(address if "://" in address else f"//{address}")
    assert parts.hostname and parts.port, f"no host:port in {address!r}"
    return parts.hostname, parts.port


# --- the configuration each pod sees -------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No TRIBRID_* variable from the test's own environment, and no ./tribrid.toml picked up."""
    for name in [n for n in os.environ if n.startswith("TRIBRID_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TRIBRID_CONFIG", str(tmp_path / "absent.toml"))
    return monkeypatch


def _pod_config(workload: Manifest, env: pytest.MonkeyPatch, tmp_path: Path) -> TriBridConfig:
    """TriBridConfig as the pod's process builds it: the mounted ConfigMap plus the pod's env vars
    (secret-sourced ones filled from secret.example.yaml)."""
    (container,) = _containers(workload)
    config_file = tmp_path / "tribrid.toml"
    config_file.write_text(_configmap_toml())
    secrets = _secret_values()
    with env.context() as mp:
        for name, var in _env(container).items():
            if not name.startswith("TRIBRID_"):
                continue
            if name == "TRIBRID_CONFIG":
                mp.setenv(name, str(config_file))
            elif "value" in var:
                mp.setenv(name, str(var["value"]))
            else:
                mp.setenv(name, secrets[var["valueFrom"]["secretKeyRef"]["key"]])
        return TriBridConfig()


def _unknown_keys(model: type[BaseModel], data: dict[str, Any], prefix: str = "") -> list[str]:
    """Keys of a TOML table that name no field. TriBridConfig forbids unknown top-level keys, but its
    sections are plain models that ignore them: `[telemetry] log_jsn = true` would pass unnoticed."""
    unknown = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        nested = field.annotation if field else None
        if field is None:
            unknown.append(prefix + key)
        elif isinstance(value, dict) and isinstance(nested, type) and issubclass(nested, BaseModel):
            unknown += _unknown_keys(nested, value, f"{prefix}{key}.")
    return unknown


def _names_a_field(model: type[BaseModel], path: list[str]) -> bool:
    field = model.model_fields.get(path[0])
    if field is None:
        return False
    if len(path) == 1:
        return True
    nested = field.annotation
    return isinstance(nested, type) and issubclass(nested, BaseModel) and _names_a_field(nested, path[1:])


# --- kustomization and metadata ------------------------------------------------------------------


def test_kustomization_applies_every_manifest_but_the_secret_example() -> None:
    kustomization = _kustomization()
    listed = list(kustomization["resources"])
    assert len(listed) == len(set(listed)), "a resource is listed twice"
    for name in listed:
        assert (K8S / name).is_file(), f"kustomization.yaml lists {name}, which does not exist"
    on_disk = {p.name for p in K8S.glob("*.y*ml")} - {"kustomization.yaml", SECRET_EXAMPLE.name}
    assert set(listed) == on_disk, "every manifest file must be listed (and only those)"
    assert SECRET_EXAMPLE.name not in listed, "real credentials must not be applied from git"
    assert kustomization["namespace"] == "tribrid"
    assert _get("Namespace", "tribrid")
    # one image per service, each with its tag
    tagged = {image["name"] for image in kustomization["images"] if image.get("newTag")}
    assert tagged == {f"tribrid-{c}" for c in (*COMPONENTS, "bridge")}


def _schema_documents() -> list[tuple[str, Manifest]]:
    """Every Kubernetes object in deploy/k8s (the kustomization is kustomize's, not the API's)."""
    return [
        (f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc)
        for path in sorted(K8S.glob("*.y*ml"))
        if path.name != "kustomization.yaml"
        for doc in _load(path)
    ]


@pytest.mark.parametrize(("name", "doc"), _schema_documents(), ids=[name for name, _ in _schema_documents()])
def test_manifest_validates_against_the_kubernetes_schema(name: str, doc: Manifest) -> None:
    # strict: a misspelt or misplaced field (which kubectl would drop or reject) fails too
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_schema_validation_catches_a_broken_manifest() -> None:
    deployment = copy.deepcopy(_deployment("fusion"))
    _containers(deployment)[0]["ports"][0]["containerPort"] = "not-a-port"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    misplaced = copy.deepcopy(_deployment("fusion"))
    misplaced["spec"]["replica"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(misplaced, KUBERNETES_VERSION, strict=True)


def test_every_resource_is_named_and_labelled() -> None:
    for doc in [*_resources(), _secret_example()]:
        meta = doc["metadata"]
        where = f"{doc['kind']} {meta.get('name')}"
        assert doc.get("apiVersion") and meta.get("name"), where
        assert "namespace" not in meta or meta["namespace"] == "tribrid", where
        assert meta["labels"]["app.kubernetes.io/part-of"] == PART_OF, where
        assert meta["labels"]["app.kubernetes.io/name"], where
    for workload in _workloads():
        labels = _pod_labels(workload)
        selector = workload["spec"]["selector"]["matchLabels"]
        name = workload["metadata"]["name"]
        assert labels["app.kubernetes.io/part-of"] == PART_OF, name
        assert labels["app.kubernetes.io/name"] == name, name
        assert selector and selector.items() <= labels.items(), f"{name}: selector must match its pods"


# --- services, ports, probes ---------------------------------------------------------------------


def _serving_port(container: dict[str, Any]) -> dict[str, Any]:
    """The port the service answers on (a gateway also declares its metrics port)."""
    (port,) = [p for p in container["ports"] if p["name"] != "metrics"]
    return cast(dict[str, Any], port)


@pytest.mark.parametrize("component", COMPONENTS)
def test_each_service_has_a_deployment_serving_it_on_its_configured_port(
    component: Component, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    container = _server(component)
    assert "command" not in container, "the image's ENTRYPOINT (tribrid) must run"
    assert container["args"] == ["serve", component]
    port = _serving_port(container)
    default_port = getattr(ServicesConfig(), f"{component}_port")
    pod_port = getattr(_pod_config(_deployment(component), clean_env, tmp_path).services, f"{component}_port")
    assert port["containerPort"] == default_port == pod_port


def _select(service: Manifest) -> Manifest:
    """The one workload whose pods the Service selects."""
    selector: dict[str, str] = service["spec"]["selector"]
    assert selector, f"Service {service['metadata']['name']} has no selector"
    matches = [w for w in _workloads() if selector.items() <= _pod_labels(w).items()]
    assert len(matches) == 1, f"Service {service['metadata']['name']} selects {len(matches)} workloads"
    return matches[0]


def _target_container_port(service: Manifest, port: Manifest) -> int:
    """The container port a Service port forwards to (named or numbered targetPort)."""
    target = port.get("targetPort", port["port"])
    for container in _containers(_select(service)):
        for cport in container.get("ports", []):
            if target in (cport.get("name"), cport["containerPort"]):
                number: int = cport["containerPort"]
                return number
    raise AssertionError(f"Service {service['metadata']['name']}: targetPort {target!r} is not on its pods")


def test_services_select_one_workload_and_target_ports_it_has() -> None:
    for service in _of_kind("Service"):
        for port in service["spec"]["ports"]:
            container_port = _target_container_port(service, port)
            if service["spec"].get("clusterIP") == "None":  # DNS gives pod IPs: no port mapping
                assert port["port"] == container_port, service["metadata"]["name"]
    for statefulset in _of_kind("StatefulSet"):
        governing = _get("Service", statefulset["spec"]["serviceName"])
        assert governing["spec"].get("clusterIP") == "None", "a StatefulSet's Service must be headless"
        assert _select(governing) is statefulset


@pytest.mark.parametrize("component", COMPONENTS)
def test_probes_check_grpc_health_from_inside_the_pod(
    component: Component, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Kubernetes' gRPC probe speaks no TLS: `python -m tribrid.probe NAME` asks the health service
    # at 127.0.0.1:<NAME_port> with the pod's own TLS settings.
    container = _server(component)
    port = _serving_port(container)
    assert (
        getattr(_pod_config(_deployment(component), clean_env, tmp_path).services, f"{component}_port")
        == (port["containerPort"])
    )
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        spec = container[probe]
        handlers = {"grpc", "httpGet", "tcpSocket", "exec"} & spec.keys()
        assert handlers == {"exec"}, f"{component} {probe}"
        assert spec["exec"]["command"] == ["python", "-m", "tribrid.probe", component], f"{component} {probe}"
        assert spec.get("timeoutSeconds", 1) >= 5, f"{component} {probe}: a Python process starts"


# --- configuration -------------------------------------------------------------------------------


def test_configmap_toml_validates_as_tribrid_config(clean_env: pytest.MonkeyPatch) -> None:
    data = tomllib.loads(_configmap_toml())
    cfg = TriBridConfig(**data)
    assert not _unknown_keys(TriBridConfig, data), "misspelt keys would be ignored"
    assert cfg.services.bind_host in ("0.0.0.0", "[::]", "::")
    assert cfg.graph_store.backend == "neo4j"
    assert cfg.telemetry.log_json
    # Credentials come from the Secret through env vars, never from the ConfigMap.
    assert "dsn" not in data.get("postgres", {})
    assert not {k for k in data.get("graph_store", {}) if "password" in k}
    assert cfg.postgres.dsn is None


def test_configmap_addresses_reach_the_intended_pods(clean_env: pytest.MonkeyPatch) -> None:
    cfg = TriBridConfig(**tomllib.loads(_configmap_toml()))

    def reaches(address: str, workload: Manifest, container_port: int) -> None:
        host, port = _host_port(address)
        service = _get("Service", host)
        (service_port,) = [p for p in service["spec"]["ports"] if p["port"] == port]
        assert _select(service) is workload, f"{address} reaches {service['metadata']['name']}'s pods"
        assert _target_container_port(service, service_port) == container_port, address

    for component in COMPONENTS:
        address = getattr(cfg.services, f"{component}_address")
        assert address, f"services.{component}_address must name the Service (bind_host is 0.0.0.0)"
        port = getattr(cfg.services, f"{component}_port")
        reaches(address, _deployment(component), port)
    assert cfg.graph_store.neo4j_uri and cfg.graph_store.neo4j_uri.startswith("bolt://")
    reaches(cfg.graph_store.neo4j_uri, _get("StatefulSet", "neo4j"), 7687)
    reaches(_secret_values()["postgres-dsn"], _get("StatefulSet", "postgres"), 5432)


@pytest.mark.parametrize("component", COMPONENTS)
def test_config_file_is_mounted_where_tribrid_config_points(component: Component) -> None:
    deployment = _deployment(component)
    path = PurePosixPath(_env(_server(component))["TRIBRID_CONFIG"]["value"])
    (mount,) = [m for m in _server(component)["volumeMounts"] if m["mountPath"] == str(path.parent)]
    (volume,) = [v for v in _pod_spec(deployment)["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == "tribrid-config"
    items = {i["path"]: i["key"] for i in volume["configMap"].get("items", [])}
    assert items.get(path.name, path.name) in _get("ConfigMap", "tribrid-config")["data"]


@pytest.mark.parametrize("component", COMPONENTS)
def test_pod_env_vars_name_config_fields_and_carry_the_secrets(
    component: Component, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = _env(_server(component))
    for name in env:
        if name.startswith("TRIBRID_") and name != "TRIBRID_CONFIG":
            path = name.removeprefix("TRIBRID_").lower().split("__")
            assert _names_a_field(TriBridConfig, path), f"{name} sets no TriBridConfig field"
    cfg = _pod_config(_deployment(component), clean_env, tmp_path)
    secrets = _secret_values()
    # Env vars and the file merge: the secret arrives and the file's settings stay.
    assert cfg.graph_store.neo4j_uri == "bolt://neo4j:7687"
    if component in POSTGRES_CLIENTS:
        assert isinstance(cfg.postgres.dsn, SecretStr)
        assert cfg.postgres.dsn.get_secret_value() == secrets["postgres-dsn"]
    else:
        assert cfg.postgres.dsn is None, "least privilege: no DSN where it is not used"
    if component in NEO4J_CLIENTS:
        assert cfg.graph_store.neo4j_password.get_secret_value() == secrets["neo4j-password"]
    else:
        assert "TRIBRID_GRAPH_STORE__NEO4J_PASSWORD" not in env
    # the generation model's key reaches the gateway only; the endpoint is off by default
    assert not cfg.generation.configured
    if component == "fusion":
        assert cfg.generation.api_key.get_secret_value() == secrets["generation-api-key"]
    else:
        assert "TRIBRID_GENERATION__API_KEY" not in env
    # every service checks bearer tokens, read from the Secret (secret.example.yaml's own tokens)
    assert cfg.auth.enabled
    caller = auth.TokenTable(cfg.auth).authenticate("Bearer change-me-admin-token")
    assert caller.has_scope("admin")


def test_bridge_checks_the_same_tokens() -> None:
    env = _env(_server("bridge"))  # type: ignore[arg-type]
    assert env["TRIBRID_AUTH__TOKENS"]["valueFrom"]["secretKeyRef"] == {
        "name": "tribrid-secrets",
        "key": "auth-tokens",
    }


def test_secret_references_volumes_and_claims_resolve() -> None:
    secret = _secret_example()
    assert secret["kind"] == "Secret"
    claims = {pvc["metadata"]["name"] for pvc in _of_kind("PersistentVolumeClaim")}
    configmaps = {cm["metadata"]["name"]: cm["data"] for cm in _of_kind("ConfigMap")}
    for workload in _workloads():
        name = workload["metadata"]["name"]
        pod = _pod_spec(workload)
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        templates = {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        for volume in volumes.values():
            if "configMap" in volume:
                assert volume["configMap"]["name"] in configmaps, name
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims, name
            if "secret" in volume:  # made by hand (deploy/README.md), like the example's
                assert volume["secret"]["secretName"] == TLS_SECRET, name
        for container in pod["containers"]:
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes.keys() | templates, f"{name}: no volume {mount['name']}"
            for var in container.get("env", []):
                ref = var.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == secret["metadata"]["name"], f"{name} {var['name']}"
                    assert ref["key"] in secret["stringData"], f"{name} {var['name']}: no key {ref['key']}"


def test_secret_example_matches_the_in_cluster_stores() -> None:
    secrets = _secret_values()
    dsn = urlsplit(secrets["postgres-dsn"])
    assert dsn.scheme in ("postgresql", "postgres")
    pg_env = _env(_containers(_get("StatefulSet", "postgres"))[0])
    assert dsn.username == pg_env["POSTGRES_USER"]["value"]
    assert dsn.path.lstrip("/") == pg_env["POSTGRES_DB"]["value"]
    assert dsn.password == secrets["postgres-password"], "the DSN must carry the server's password"
    assert pg_env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == "postgres-password"
    assert len(secrets["neo4j-password"]) >= 8, "Neo4j 5 refuses passwords under 8 characters"
    neo_env = _env(_containers(_get("StatefulSet", "neo4j"))[0])
    user, _, password_ref = neo_env["NEO4J_AUTH"]["value"].partition("/")
    assert user == TriBridConfig.model_fields["graph_store"].default.neo4j_user
    var = re.fullmatch(r"\$\((\w+)\)", password_ref)
    assert var, "NEO4J_AUTH must take the password from the secret"
    assert neo_env[var.group(1)]["valueFrom"]["secretKeyRef"]["key"] == "neo4j-password"
    # The image turns every other NEO4J_* variable into a setting; the password must not be one.
    assert not var.group(1).startswith("NEO4J_")


# --- images, resources, security, scaling --------------------------------------------------------


def test_containers_have_images_and_bounded_resources(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for workload in _workloads():
        for container in _containers(workload):
            where = f"{workload['metadata']['name']}/{container['name']}"
            assert container.get("image") and not container["image"].endswith(":latest"), where
            resources = container["resources"]
            for kind in ("cpu", "memory"):
                request = _quantity(resources["requests"][kind])
                assert 0 < request <= _quantity(resources["limits"][kind]), f"{where} {kind}"
    for component in COMPONENTS:
        assert _server(component)["image"] == f"tribrid-{component}", (
            "kustomization.yaml's images: sets the tag"
        )
    cfg = _pod_config(_deployment("vector"), clean_env, tmp_path)
    for component in MODEL_HOLDERS:
        resources = _server(component)["resources"]
        assert _quantity(resources["requests"]["memory"]) >= 2**30, f"{component} holds the model"
        assert _quantity(resources["limits"]["cpu"]) >= cfg.embedding.num_threads, component


def _dockerfile_uid() -> int:
    (user,) = re.findall(r"^USER\s+(\S+)", DOCKERFILE.read_text(), re.MULTILINE)
    uid = user.split(":")[0]
    assert uid.isdigit(), "USER must be numeric for runAsNonRoot to verify it"
    return int(uid)


@pytest.mark.parametrize("component", COMPONENTS)
def test_tribrid_pods_run_unprivileged_on_a_read_only_root(component: Component) -> None:
    pod = _pod_spec(_deployment(component))
    container = _server(component)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == _dockerfile_uid()
    assert pod.get("automountServiceAccountToken") is False
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    (tmp,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == tmp["name"]]
    assert "emptyDir" in volume, "/tmp must be writable"


def test_stores_run_as_non_root() -> None:
    for statefulset in _of_kind("StatefulSet"):
        assert _pod_spec(statefulset)["securityContext"]["runAsNonRoot"] is True


@pytest.mark.parametrize("component", COMPONENTS)
def test_termination_grace_covers_the_shutdown_drain(
    component: Component, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    deployment = _deployment(component)
    services = _pod_config(deployment, clean_env, tmp_path).services
    assert services.drain_delay_s > 0, "endpoints need a moment to drop a terminating pod"
    drain = services.drain_delay_s + services.shutdown_grace_s
    assert _pod_spec(deployment)["terminationGracePeriodSeconds"] > drain


@pytest.mark.parametrize("workload", [*COMPONENTS, "bridge"])
def test_tls_files_are_mounted_from_the_tls_secret(
    workload: str, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    deployment = _get("Deployment", f"tribrid-{workload}")
    services = _pod_config(deployment, clean_env, tmp_path).services
    assert services.tls_client_auth, "mutual TLS between our services"
    (container,) = _containers(deployment)
    volumes = {v["name"]: v for v in _pod_spec(deployment)["volumes"]}
    for path in (services.tls_cert_file, services.tls_key_file, services.tls_ca_file):
        assert path is not None
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == str(path.parent)]
        assert mount.get("readOnly") is True
        assert volumes[mount["name"]]["secret"]["secretName"] == TLS_SECRET, f"{workload} {path}"
        assert "items" not in volumes[mount["name"]]["secret"], "the Secret's keys are the file names"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        if "httpGet" in container[probe]:
            assert container[probe]["httpGet"]["scheme"] == "HTTPS", f"{workload} {probe}"


def test_hpas_scale_the_query_path_on_cpu() -> None:
    hpas = {hpa["spec"]["scaleTargetRef"]["name"]: hpa for hpa in _of_kind("HorizontalPodAutoscaler")}
    assert set(hpas) == {f"tribrid-{c}" for c in AUTOSCALED}
    for name, hpa in hpas.items():
        assert hpa["apiVersion"] == "autoscaling/v2"
        assert hpa["spec"]["scaleTargetRef"]["kind"] == "Deployment"
        deployment = _get("Deployment", name)
        assert "replicas" not in deployment["spec"], f"{name}: `kubectl apply` would reset the HPA's count"
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
        (metric,) = hpa["spec"]["metrics"]
        assert metric["resource"]["name"] == "cpu"
        assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 70}
        for container in _containers(deployment):  # utilization is relative to the request
            assert _quantity(container["resources"]["requests"]["cpu"]) > 0, name


def _max_pods(deployment: Manifest) -> int:
    """Pods a Deployment can run at once: its HPA's maximum (or replicas) plus a rollout's surge."""
    name = deployment["metadata"]["name"]
    hpas = [h for h in _of_kind("HorizontalPodAutoscaler") if h["spec"]["scaleTargetRef"]["name"] == name]
    replicas: int = hpas[0]["spec"]["maxReplicas"] if hpas else deployment["spec"].get("replicas", 1)
    strategy = deployment["spec"].get("strategy", {})
    if strategy.get("type") == "Recreate":
        return replicas
    surge = str(strategy.get("rollingUpdate", {}).get("maxSurge", "25%"))
    extra = math.ceil(replicas * int(surge[:-1]) / 100) if surge.endswith("%") else int(surge)
    return replicas + extra


def test_postgres_max_connections_cover_every_pool(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    args = _containers(_get("StatefulSet", "postgres"))[0]["args"]
    settings = dict(a.split("=", 1) for a in args if "=" in a)
    available = int(settings.get("max_connections", 100)) - int(
        settings.get("superuser_reserved_connections", 3)
    )
    needed = 0
    for deployment in _of_kind("Deployment"):
        if "TRIBRID_POSTGRES__DSN" in _env(_containers(deployment)[0]):
            postgres = _pod_config(deployment, clean_env, tmp_path).postgres
            searches = deployment["metadata"]["name"] in {f"tribrid-{name}" for name in SEARCH_POOLS}
            pool = postgres.search_pool_max_size if searches else postgres.pool_max_size
            needed += _max_pods(deployment) * pool
    assert 0 < needed <= available, f"pools can open {needed} connections; PostgreSQL allows {available}"


# --- the image -----------------------------------------------------------------------------------


def _pyproject_pin(package: str) -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps: list[str] = [
        *project["dependencies"],
        *(d for g in project["optional-dependencies"].values() for d in g),
    ]
    (pin,) = {d.split("==", 1)[1] for d in deps if re.fullmatch(rf"{re.escape(package)}==\S+", d)}
    return pin


def test_dockerfile_pins_match_pyproject_and_config() -> None:
    text = DOCKERFILE.read_text()
    # A torch pin that drifts from pyproject's makes `pip install .` fetch the CUDA build.
    assert re.findall(r"\btorch==(\S+)", text) == [_pyproject_pin("torch")]
    assert "--index-url https://download.pytorch.org/whl/cpu torch==" in text
    # Generated stubs refuse to import under an older grpcio than the grpcio-tools that made them.
    assert re.findall(r"grpcio-tools==(\S+)", text) == [_pyproject_pin("grpcio")]
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    python = re.search(r"python:(\d+\.\d+)-slim", text)
    assert python and f">={python.group(1)}" in requires
    assert _dockerfile_uid() != 0
    # one target per service: its own port and command; `all` last, with every port
    targets = re.findall(
        r"^FROM runtime AS (\S+)\n(?:.*\n)*?EXPOSE (.+)\nCMD \[\"serve\", \"(\S+)\"\]$", text, re.M
    )
    services = ServicesConfig()
    expected = [(c, str(getattr(services, f"{c}_port")), c) for c in (*COMPONENTS_BY_IMAGE, "bridge")]
    assert sorted(targets[:-1]) == sorted(expected)
    every_port = {getattr(services, f"{c}_port") for c in (*COMPONENTS, "bridge")}
    assert targets[-1][0] == "all" and {int(p) for p in targets[-1][1].split()} == every_port
    assert targets[-1][2] == "all"
    assert re.search(r'^ENTRYPOINT \["tribrid"\]$', text, re.MULTILINE)
    assert re.search(r"^\s+HF_HUB_OFFLINE=1", text, re.MULTILINE)


def test_image_default_config_validates(clean_env: pytest.MonkeyPatch) -> None:
    text = DOCKERFILE.read_text()
    copied = re.search(r"^COPY (deploy/docker/\S+\.toml) (\S+)$", text, re.MULTILINE)
    assert copied, "the image ships a default tribrid.toml"
    assert f"TRIBRID_CONFIG={copied.group(2)}" in text
    data = tomllib.loads((ROOT / copied.group(1)).read_text())
    cfg = TriBridConfig(**data)
    assert not _unknown_keys(TriBridConfig, data)
    assert cfg.services.bind_host == "0.0.0.0", "loopback is unreachable from outside a container"
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    for needed in (
        "pyproject.toml",
        "protos",
        "tribrid",
        "services",
        "tribridctl",
        "deploy",
        "deploy/docker",
    ):
        assert needed not in ignored, f".dockerignore hides {needed}, which the build copies"


def test_http_bridge_is_deployed_on_its_port_with_http_probes() -> None:
    deployment = _get("Deployment", "tribrid-bridge")
    (container,) = _containers(deployment)
    assert container["args"] == ["serve", "bridge"]
    port = ServicesConfig().bridge_port
    assert [p["containerPort"] for p in container["ports"]] == [port]
    probes = {
        kind: container[kind]["httpGet"]["path"]
        for kind in ("startupProbe", "readinessProbe", "livenessProbe")
    }
    assert probes == {"startupProbe": "/healthz", "readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    service = _get("Service", "tribrid-bridge")
    selector = service["spec"]["selector"]
    assert selector and all(_pod_labels(deployment).get(k) == v for k, v in selector.items())
    assert [p["port"] for p in service["spec"]["ports"]] == [port]
