"""scripts/balancer.py: the nginx configuration rendered from the template shared with the container recipe, and
accepted by Debian's nginx (nginx -t; skipped where it is not installed)."""
import shutil

import pytest

from scripts import balancer


def test_only_the_template_placeholders_are_filled_and_nginx_variables_are_kept():
    text = "listen ${ATTN_LISTEN};\nset $x $host${uri};\n    ${ATTN_UPSTREAMS}\n"
    out = balancer.render(text, {"ATTN_LISTEN": "8080", "ATTN_UPSTREAMS": "server a:1;"})
    assert out == "listen 8080;\nset $x $host${uri};\n    server a:1;\n"
    with pytest.raises(balancer.BalancerError, match="needs a value for ATTN_UPSTREAMS"):
        balancer.render(text, {"ATTN_LISTEN": "8080"})


def test_the_shared_template_routes_by_a_sticky_cookie_and_passes_websockets_on():
    text = balancer.TEMPLATE.read_text()
    assert set(balancer.PLACEHOLDER.findall(text)) == {"ATTN_LISTEN", "ATTN_UPSTREAMS", "ATTN_RESOLVER"}
    assert "hash $attn_route_key consistent;" in text and f"$cookie_{balancer.ROUTE_COOKIE}" in text
    assert f"add_header {balancer.REPLICA_HEADER} $upstream_addr always;" in text
    assert "location = /_stcore/stream" in text and "proxy_set_header Upgrade $http_upgrade;" in text
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert not any(balancer.PLACEHOLDER.search(line) for line in comments)   # a value of several lines would escape


def test_every_replica_is_a_server_line():
    assert balancer.upstreams([8601, 8602]) == ("server 127.0.0.1:8601 max_fails=1 fail_timeout=5s;\n"
                                                "    server 127.0.0.1:8602 max_fails=1 fail_timeout=5s;")


def test_a_missing_nginx_says_how_to_install_it():
    with pytest.raises(balancer.BalancerError, match="apt-get install nginx"):
        balancer.find_nginx("/nowhere/nginx")


@pytest.mark.skipif(shutil.which("nginx") is None and shutil.which(balancer.DEBIAN_NGINX) is None,
                    reason="nginx is not installed (Debian's package 'nginx'; .ci/run installs it)")
def test_nginx_accepts_the_rendered_configuration_and_refuses_a_broken_one(tmp_path):
    nginx = balancer.find_nginx()
    conf = balancer.write_config(tmp_path / "nginx", "127.0.0.1:18080", [18601, 18602])
    balancer.check(nginx, conf)                       # nginx -t: syntax, variables, the upstream block
    site = (conf.parent / "attention-explorer.conf").read_text()
    assert "server 127.0.0.1:18602 max_fails=1" in site and "${" not in site
    (conf.parent / "attention-explorer.conf").write_text(site.replace("hash $attn_route_key", "hash_nonsense"))
    with pytest.raises(balancer.BalancerError, match="nginx refused its configuration"):
        balancer.check(nginx, conf)
