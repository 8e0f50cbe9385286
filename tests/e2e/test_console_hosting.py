"""The local stack serves the web console (decision 0138) as its template's distribution does, at ``console_url``
(also in ``info()``, the ``batch-gateway local`` JSON line), and the key mount answers CORS for that origin: a page
loaded from it may call the API with a key, and its CSP lets it connect to that API alone."""

from __future__ import annotations

from urllib.parse import urlsplit

import requests

from batch_gateway.constants import KEY_MOUNT_PREFIX


def test_the_console_is_served_with_config_json_naming_this_stacks_api(stack):
    info = stack.info()
    assert info["console_url"] == stack.console_url == f"{stack.console_origin}/"
    assert urlsplit(stack.console_url).hostname == "127.0.0.1"
    page = requests.get(stack.console_url, timeout=30)
    assert page.status_code == 200 and "<script" in page.text
    api = urlsplit(info["api_url"])
    assert f"connect-src 'self' {api.scheme}://{api.netloc};" in page.headers["Content-Security-Policy"]
    config = requests.get(stack.console_url + "config.json", timeout=30).json()
    assert config["api_url"] == info["api_url"]


def test_a_page_from_the_console_origin_may_call_the_key_mount(stack, alice):
    """What a browser does from the console: a preflight, then the call with the key; both name the console's origin
    (a browser refuses an answer naming another)."""
    api_url, origin = stack.info()["api_url"], stack.console_origin
    preflight = requests.options(
        api_url + KEY_MOUNT_PREFIX + "/batches",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
        timeout=30,
    )
    assert preflight.status_code == 204 and preflight.headers["Access-Control-Allow-Origin"] == origin
    key = stack.api_key(alice)
    listed = requests.get(
        api_url + KEY_MOUNT_PREFIX + "/batches",
        headers={"Origin": origin, "Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert listed.status_code == 200 and listed.headers["Access-Control-Allow-Origin"] == origin
