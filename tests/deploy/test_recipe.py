"""deploy/: the container recipe. No Docker daemon is needed (nor used): the compose file is checked against the
Compose Specification's schema and against the nginx template it shares with scripts/serve.py, and the Dockerfile
against requirements.txt and what the app needs (non-root, health check, the shipped checkpoints in)."""
import json
import re

import jsonschema
import pytest
import yaml

from core.paths import REPO
from scripts import balancer

DEPLOY = REPO / "deploy"
SETTINGS = {"POSTGRES_PASSWORD": "example", "STREAMLIT_SERVER_COOKIE_SECRET": "ab" * 32}   # the two required ones


def interpolate(text: str, env: dict) -> str:
    """${NAME}, ${NAME:-default} and ${NAME:?message} as Compose fills them; an unset required one is an error."""
    def value(m):
        name, op, rest = m.group(1), m.group(2), m.group(3)
        if name in env:
            return env[name]
        if op == ":-":
            return rest
        raise KeyError(f"{name} is required: {rest}")
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)([^}]*))?\}", value, text)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(interpolate((DEPLOY / "compose.yaml").read_text(), SETTINGS))


def test_the_compose_file_follows_the_compose_specification(compose):
    schema = json.loads((REPO / "tests" / "fixtures" / "deploy" / "compose-spec.json").read_text())
    jsonschema.validate(compose, schema)
    assert compose["services"]["app"]["deploy"]["replicas"] == 2
    with pytest.raises(KeyError, match="POSTGRES_PASSWORD is required"):      # no default password
        interpolate((DEPLOY / "compose.yaml").read_text(), {})
    replicas = yaml.safe_load(interpolate((DEPLOY / "compose.yaml").read_text(), {**SETTINGS, "ATTN_REPLICAS": "5"}))
    assert replicas["services"]["app"]["deploy"]["replicas"] == 5


def test_the_balancer_fills_every_placeholder_of_the_shared_template(compose):
    nginx = compose["services"]["balancer"]
    mounted = [v.split(":") for v in nginx["volumes"]]
    assert [(DEPLOY / src).resolve() for src, dst, *_ in mounted if dst.startswith("/etc/nginx/templates/")] \
        == [balancer.TEMPLATE]
    env = nginx["environment"]
    site = balancer.render(balancer.TEMPLATE.read_text(), env)       # a missing placeholder raises
    assert "server app:8501 resolve" in site and "$cookie_attn_replica" in site
    only = re.compile(env["NGINX_ENVSUBST_FILTER"])              # the image's entrypoint matches names with awk's ~
    assert all(only.search(name) for name in balancer.PLACEHOLDER.findall(balancer.TEMPLATE.read_text()))
    assert not any(only.search(name) for name in ("host", "request_id", "HOME", "PATH", "upstream_addr"))


def test_the_replicas_share_the_class_database_the_models_volume_and_one_cookie_secret(compose):
    app, db = compose["services"]["app"], compose["services"]["db"]
    env = app["environment"]
    assert env["ATTN_EXPLORER_CLASS_DB"] == f"postgresql://{db['environment']['POSTGRES_USER']}:example@db:5432/" \
                                           f"{db['environment']['POSTGRES_DB']}"
    assert env["STREAMLIT_SERVER_COOKIE_SECRET"] == "ab" * 32
    assert "models:/var/cache/attention-explorer" in app["volumes"]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "ATTN_EXPLORER_CACHE=/var/cache/attention-explorer" in dockerfile
    assert app["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}


def test_the_dockerfile_pins_torch_as_requirements_do_and_runs_as_a_user_with_a_health_check():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    pins = [line.split()[0] for line in (REPO / "requirements.txt").read_text().splitlines()
            if re.match(r"^torch==", line)]
    assert len(pins) == 1                          # what the Dockerfile's grep finds
    assert "grep -E '^torch==' requirements.txt" in dockerfile and "download.pytorch.org/whl/cpu" in dockerfile
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK .*\n?.*/_stcore/health", dockerfile, re.M)
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert not any(p.strip("/") in ("checkpoints", "app", "core") for p in ignored)
    assert (REPO / "checkpoints").is_dir()
