"""A Ray cluster's address checked before any work (``ray_address`` of a training config, ``--ray-address``
of ``treppen tournament`` and ``treppen label``), without Ray: an address where nothing answers is
refused in seconds, where ``ray.init`` would retry for more than a minute (docs/guide/scale_out.md).
"""

from __future__ import annotations

import os
import socket

#: Seconds a connection to the cluster's head may take before the address is refused.
CONNECT_TIMEOUT_S = 10.0
#: The port of a head given without one (Ray's GCS port).
DEFAULT_PORT = 6379
#: Addresses that start a Ray instance here, or that Ray resolves itself (``auto``: the running
#: cluster of this machine, or ``RAY_ADDRESS``).
LOCAL_ADDRESSES = ("local", "auto")


def head_of(address: str) -> tuple[str, int]:
    """(host, port) of ``host:port``, ``ray://host:port``, ``[ipv6]:port`` or ``host`` (port :data:`DEFAULT_PORT`).

    :raises ValueError: for a port that is no number 1..65535, or no host.
    """
    rest = address.removeprefix("ray://")
    if rest.startswith("["):  # [::1]:6379
        host, _, port = rest[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    if not host or (port and not (port.isdigit() and 1 <= int(port) <= 65535)):
        raise ValueError(f"ray address {address!r}: give auto, local or HOST:PORT (e.g. 10.0.0.1:6379)")
    return host, int(port) if port else DEFAULT_PORT


def check_ray_address(address: str | None, key: str) -> None:
    """Refuse a cluster address where nothing answers, within :data:`CONNECT_TIMEOUT_S` seconds:
    a TCP connection to its head (``None``, ``local`` and ``auto`` pass: Ray starts or finds those
    itself; ``auto`` with ``RAY_ADDRESS`` set is that address).

    :param key: names the setting in the message (``config key ray_address``, ``--ray-address``).
    :raises ValueError: naming ``key``, the address and the reason, for a malformed address or one
        where no connection opens.
    """
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS") or address
    if address is None or address in LOCAL_ADDRESSES:
        return
    try:
        host, port = head_of(address)
    except ValueError as err:
        raise ValueError(f"{key}: {err}") from None
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as err:
        reason = f"no answer within {CONNECT_TIMEOUT_S:g} s" if isinstance(err, TimeoutError) else err.strerror
        raise ValueError(
            f"{key}={address}: no Ray cluster answers at {host}:{port} ({reason or type(err).__name__}); "
            "start its head (ray start --head) or give the address it printed"
        ) from None
