"""Page tokens: the next page of one fused answer, signed so a client cannot forge a position.

A token holds the offset of the next page and a digest of the request it pages (everything but
the token: corpus, query, filters, options, top_k), under an HMAC of the gateway's key. A token
is only valid for the request that produced it, so every page comes from the same fused list.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct

from tribrid.options import invalid
from tribrid.v1 import common_pb2

_DIGEST_BYTES = 16
_MAC_BYTES = 16
_OFFSET = struct.Struct(">I")


def _request_digest(request: common_pb2.SearchRequest) -> bytes:
    unpaged = common_pb2.SearchRequest()
    unpaged.CopyFrom(request)
    unpaged.ClearField("page_token")
    unpaged.ClearField("reading")  # set by the gateway for the legs, never part of what is asked
    return hashlib.sha256(unpaged.SerializeToString(deterministic=True)).digest()[:_DIGEST_BYTES]


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()[:_MAC_BYTES]


def next_token(request: common_pb2.SearchRequest, offset: int, key: bytes) -> str:
    """The token of the page of `request` that starts at `offset`."""
    payload = _OFFSET.pack(offset) + _request_digest(request)
    return base64.urlsafe_b64encode(payload + _mac(key, payload)).decode().rstrip("=")


def offset_of(request: common_pb2.SearchRequest, key: bytes) -> int:
    """Where the page `request.page_token` names starts (0 without a token); INVALID_ARGUMENT for
    a token this gateway did not sign or that belongs to another request."""
    token = request.page_token
    if not token:
        return 0
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    payload, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
    if len(payload) != _OFFSET.size + _DIGEST_BYTES or not hmac.compare_digest(mac, _mac(key, payload)):
        raise invalid(
            "page_token is not a token this service gave: send next_page_token from the previous answer"
        )
    if payload[_OFFSET.size :] != _request_digest(request):
        raise invalid(
            "page_token belongs to another request: send the same corpus_id, query, top_k, filters and "
            "options as the first page"
        )
    (offset,) = _OFFSET.unpack(payload[: _OFFSET.size])
    return int(offset)
