"""Webhook URL safety (decision 0071): which URLs a webhook may name, and which addresses a delivery may connect to.

Checked twice: the URL itself when a subscription or a job's webhook is created (scheme, no userinfo, a hostname or
a public IP literal, no space, control character or unpaired surrogate anywhere), and every address the hostname
resolves to at **every** delivery (``resolve_checked``): the delivery then connects to that checked address itself,
with the hostname only in the ``Host`` header and TLS SNI, so a DNS answer that changes between the check and the
connection (rebinding) cannot move it to another address.

Refused: private (RFC 1918, CGNAT 100.64/10, ULA fc00::/7), link-local (169.254/16, fe80::/10, which holds the
instance metadata addresses 169.254.169.254 and fd00:ec2::254 is ULA), loopback (unless the deployment allows plain
http to loopback: the local stack), unspecified, multicast, reserved and every other non-global address, IPv4
addresses in IPv6 clothing (mapped, NAT64, 6to4, Teredo) judged by the IPv4 address they carry.

A URL is delivered as the tenant gave it, written as HTTP needs it: an internationalised host name by its IDNA name
(``xn--...``, Python's ``idna`` codec; every check above is made on that name, so ``ｌｏｃａｌｈｏｓｔ`` is
``localhost``), and every character RFC 3986 does not allow in a path or query percent-encoded as UTF-8 (``/café``
is sent as ``/caf%C3%A9``; escapes already there are kept, a ``%`` that starts none is ``%25``).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from urllib.parse import quote, urlsplit

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.webhooks import Address, WebhookUrl
from batch_gateway.ports import Resolver

MAX_URL_CHARS = 2048
LOOPBACK_NAMES = ("localhost", "localhost.")
_HOST_LABEL = re.compile(r"\A(?!-)[a-z0-9-]{1,63}(?<!-)\Z")
_NUMERIC_HOST = re.compile(r"\A(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+))*\.?\Z")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# What a path or query may hold besides the unreserved characters (which ``quote`` always keeps): RFC 3986's
# sub-delims, ":", "@", "/", "?" and the "%" of an escape.
_PATH_AND_QUERY_SAFE = "!$&'()*+,;=:@/?%"
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class UnsafeWebhookUrlError(InvalidRequestError):
    """A webhook URL or the address it resolves to is not one a delivery may reach (400 at create)."""


def _refuse(url: str, why: str, field: str) -> UnsafeWebhookUrlError:
    return UnsafeWebhookUrlError(f"webhook url {why}", details=[{"field": field, "message": why}])


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, NAT64, 6to4, Teredo), else None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def address_problem(address: Address, *, allow_loopback: bool = False) -> str | None:
    """Why a delivery must not connect to ``address``, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried is not None:
            return address_problem(carried, allow_loopback=allow_loopback)
        if address.scope_id:
            return "is a scoped (link-local) address"
    if address.is_loopback:
        return None if allow_loopback else "is a loopback address"
    if str(address) in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "169.254.169.253"):
        return "is the instance metadata address"
    if address.is_unspecified:
        return "is the unspecified address"
    if address.is_link_local:
        return "is a link-local address"
    if address.is_multicast:
        return "is a multicast address"
    if address in ipaddress.ip_network("100.64.0.0/10"):
        return "is a carrier-grade NAT (shared) address"
    if address.is_private:
        return "is a private address"
    if address.is_reserved or not address.is_global:
        return "is not a public address"
    return None


def check_url(url: object, *, allow_loopback_http: bool, field: str = "url") -> WebhookUrl:
    """The URL parsed when a webhook may name it, else ``UnsafeWebhookUrlError`` (a 400) saying why."""
    if not isinstance(url, str) or not url:
        raise _refuse(str(url), "must be an https URL", field)
    if len(url) > MAX_URL_CHARS:
        raise _refuse(url, f"must be at most {MAX_URL_CHARS} characters", field)
    if any(ch.isspace() or unicodedata.category(ch) == "Cc" for ch in url):  # Cc: C0, DEL and C1
        raise _refuse(url, "must not contain spaces or control characters", field)
    if any(unicodedata.category(ch) == "Cs" for ch in url):  # JSON can carry one; no UTF-8, so no request, can
        raise _refuse(url, "must be valid text (it holds an unpaired surrogate)", field)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise _refuse(url, "is not a valid URL", field) from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise _refuse(url, "must use https", field)
    if "@" in parts.netloc:
        raise _refuse(url, "must not carry a user name or password", field)
    host = (parts.hostname or "").lower()
    if not host:
        raise _refuse(url, "must name a host", field)
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")  # the name DNS, the Host header and TLS know it by
        except UnicodeError:
            raise _refuse(url, f"host {host[:100]} is not a valid DNS name", field) from None
    loopback = False
    try:
        address: Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        problem = address_problem(address, allow_loopback=allow_loopback_http)
        if problem:
            raise _refuse(url, f"host {host} {problem}", field)
        loopback = address.is_loopback
    elif host in LOOPBACK_NAMES or host.endswith(".localhost") or host.endswith(".localhost."):
        if not allow_loopback_http:
            raise _refuse(url, f"host {host} is a loopback address", field)
        loopback = True
    else:
        if _NUMERIC_HOST.match(host):
            raise _refuse(url, f"host {host} is not a canonical IP address or a DNS name", field)
        name = host.removesuffix(".")  # a fully qualified name's root dot is no character of the name
        if len(name) > 253 or not all(_HOST_LABEL.match(label) for label in name.split(".")):
            raise _refuse(url, f"host {host[:100]} is not a valid DNS name", field)
    if scheme == "http" and not (allow_loopback_http and loopback):
        raise _refuse(url, "must use https", field)
    target = _request_target(parts.path or "/", parts.query)
    return WebhookUrl(url=url, scheme=scheme, host=host, port=port or (443 if scheme == "https" else 80), target=target)


def _request_target(path: str, query: str) -> str:
    """Path and query as the request line carries them: what RFC 3986 does not allow there percent-encoded (UTF-8)."""
    target = path + (f"?{query}" if query else "")
    return quote(_LONE_PERCENT.sub("%25", target), safe=_PATH_AND_QUERY_SAFE)


def resolve_checked(
    url: WebhookUrl, *, allow_loopback_http: bool, resolver: Resolver, timeout: float | None = None
) -> list[Address]:
    """The addresses a delivery may connect to, IPv4 first (a Lambda outside a VPC has no IPv6 egress), each family
    in the resolver's order: every address the host resolves to must be allowed (one private answer among public
    ones refuses the delivery), else ``UnsafeWebhookUrlError``; so is no answer within ``timeout`` seconds."""
    try:
        literal: Address | None = ipaddress.ip_address(url.host)
    except ValueError:
        literal = None
    if literal is not None:
        answers = [literal]
    else:
        try:
            found = resolver.resolve(url.host, url.port, timeout)
            answers = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        except (OSError, UnicodeError, ValueError) as exc:
            raise _refuse(url.url, f"host {url.host} does not resolve ({type(exc).__name__})", "url") from None
    if not answers:
        raise _refuse(url.url, f"host {url.host} does not resolve", "url")
    for address in answers:
        problem = address_problem(address, allow_loopback=allow_loopback_http)
        if problem:
            raise _refuse(url.url, f"host {url.host} resolves to {address}, which {problem}", "url")
        if url.scheme == "http" and not address.is_loopback:
            raise _refuse(url.url, "must use https", "url")
    unique = list(dict.fromkeys(answers))
    return [a for a in unique if a.version == 4] + [a for a in unique if a.version == 6]
