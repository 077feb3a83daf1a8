"""nginx as the load balancer of the app's replicas on one machine (scripts/serve.py): its configuration rendered
from the template the container recipe uses too (deploy/nginx/attention-explorer.conf.template), run in the
foreground as a child process, with its pid, temporary and log files in a folder of its own."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

# the project folder, as core.paths has it: not imported from there, which would load torch into the launcher
REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "deploy" / "nginx" / "attention-explorer.conf.template"
PLACEHOLDER = re.compile(r"\$\{(ATTN_[A-Z_]+)\}")
DEBIAN_NGINX = "/usr/sbin/nginx"
REPLICA_HEADER = "X-Attn-Replica"          # the template's header naming the replica that answered
ROUTE_COOKIE = "attn_replica"              # the template's sticky cookie

# The main configuration around the template, for an nginx run by an ordinary command rather than as the system's
# service: in the foreground (its parent stops it), every file it writes in `folder`, errors to the terminal.
MAIN = """daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
worker_shutdown_timeout 3s;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    include {folder}/attention-explorer.conf;
}}
"""


class BalancerError(RuntimeError):
    """nginx is missing or refused its configuration: worded for the person who started the servers."""


def render(template: str, values: dict[str, str]) -> str:
    """The template with each ${ATTN_...} replaced by its value, as the nginx image's envsubst does; nginx's own
    $variables are left alone. A placeholder without a value is a BalancerError."""
    missing = sorted(set(PLACEHOLDER.findall(template)) - set(values))
    if missing:
        raise BalancerError(f"the nginx template needs a value for {', '.join(missing)}")
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def upstreams(ports: list[int], host: str = "127.0.0.1") -> str:
    """The `server` lines of the replicas: one refused connection marks a replica down for 5 s (it is tried again
    then), and its visitors go to the next live one."""
    return "\n    ".join(f"server {host}:{port} max_fails=1 fail_timeout=5s;" for port in ports)


def write_config(folder: Path, listen: str, ports: list[int]) -> Path:
    """nginx.conf and the rendered template in `folder` (made readable to nginx's workers); returns nginx.conf."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)                    # run as root, nginx's workers are `nobody`: they create temp files here
    site = render(TEMPLATE.read_text(encoding="utf-8"),
                  {"ATTN_LISTEN": listen, "ATTN_UPSTREAMS": upstreams(ports), "ATTN_RESOLVER": ""})
    (folder / "attention-explorer.conf").write_text(site, encoding="utf-8")
    conf = folder / "nginx.conf"
    conf.write_text(MAIN.format(folder=folder), encoding="utf-8")
    return conf


def find_nginx(given: str | None = None) -> str:
    """The nginx program: `given`, else nginx on PATH, else Debian's /usr/sbin/nginx; BalancerError if none."""
    found = shutil.which(given or "nginx") or (None if given else shutil.which(DEBIAN_NGINX))
    if found is None:
        raise BalancerError(f"nginx is not installed ({given or 'nginx'} not found): install Debian's package "
                            "(`apt-get install nginx`), or give its path with --nginx.")
    return found


def why_not() -> str | None:
    """Why nginx cannot be run here (None: it can), for the tests that skip without it."""
    try:
        find_nginx()
    except BalancerError as e:
        return str(e)
    return None


def command(nginx: str, conf: Path, test: bool = False) -> list[str]:
    """nginx with this configuration, its prefix the configuration's folder (-e: no system error log is opened)."""
    return [nginx, "-p", str(conf.parent), "-c", str(conf), "-e", "stderr"] + (["-t", "-q"] if test else [])


def check(nginx: str, conf: Path) -> None:
    """BalancerError with nginx's own words if it refuses the configuration (nginx -t)."""
    done = subprocess.run(command(nginx, conf, test=True), capture_output=True, text=True)
    if done.returncode != 0:
        raise BalancerError(f"nginx refused its configuration ({conf}):\n{done.stderr.strip()}")


def start(nginx: str, conf: Path) -> subprocess.Popen:
    """nginx in the foreground, a child of this process."""
    return subprocess.Popen(command(nginx, conf))
