"""A2A message parts and ACP content blocks, each way, as their JSON (A2A's camelCase, ACP's wire form).

An A2A part is text, raw bytes, a URL or structured data, each with an optional media type, file
name and metadata; an ACP prompt or message is a list of content blocks (text, image, audio, an
embedded resource, a resource link). The mapping is the one place both ways are decided:

=========================  =================================================================
A2A part                   ACP content block
=========================  =================================================================
text                       ``text``
data                       ``text`` holding its JSON (what an agent can read)
raw, ``image/*``           ``image`` (base64 ``data``, ``mimeType``)
raw, ``audio/*``           ``audio``
raw, any other type        ``resource`` with a ``blob``, its ``uri`` the file name
url                        ``resource_link`` (``name``: the file name, else the URL)
=========================  =================================================================

What a block has no place for (a data part's being data, a file name, the part's metadata) rides in
the block's ``_meta`` under ``"a2a"``, so a part that goes to ACP and back is the same part: that is
how the A2A server hands a message's parts to any backend and the a2a backend forwards them unchanged.
Blocks an ACP agent writes have no such entry; their file name comes from the resource's URI.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from e2a_grpc import jsontext
from e2a_grpc.errors import E2ATypeError, E2AValueError, type_name

#: The ``_meta`` key of a block under which what ACP has no field for travels.
META_KEY = "a2a"
#: ``_meta.a2a.part`` of a text block that was an A2A data part.
DATA_PART = "data"
#: A resource needs a URI: this one stands in for a raw part without a file name.
UNNAMED_RESOURCE_URI = "attachment"
#: ACP block types that carry a file (the rest is text).
FILE_BLOCK_TYPES = frozenset({"image", "audio", "resource", "resource_link"})


def acp_block(part: dict[str, Any], path: str) -> dict[str, Any]:
    """The ACP content block of one A2A part (its JSON)."""
    extra: dict[str, Any] = {}
    if "metadata" in part:
        extra["metadata"] = part["metadata"]
    media_type = part.get("mediaType")
    filename = part.get("filename")
    if "text" in part:
        block: dict[str, Any] = {"type": "text", "text": _string(part["text"], f"{path}.text")}
        extra.update({key: part[key] for key in ("mediaType", "filename") if key in part})
    elif "data" in part:
        block = {"type": "text", "text": jsontext.dumps(part["data"], f"{path}.data")}
        extra["part"] = DATA_PART
        extra.update({key: part[key] for key in ("mediaType", "filename") if key in part})
    elif "raw" in part:
        data = _base64(part["raw"], f"{path}.raw")
        kind = media_type.partition("/")[0] if isinstance(media_type, str) else ""
        if kind in ("image", "audio"):
            block = {"type": kind, "data": data, "mimeType": media_type}
            if filename is not None:
                extra["filename"] = filename
        else:
            resource: dict[str, Any] = {"uri": filename or UNNAMED_RESOURCE_URI, "blob": data}
            if media_type:
                resource["mimeType"] = media_type
            block = {"type": "resource", "resource": resource}
            if not filename:
                extra["filename"] = None  # the URI is a stand-in, not the part's name
            elif _file_name(filename) != filename:
                extra["filename"] = filename
    elif "url" in part:
        url = _string(part["url"], f"{path}.url")
        if not url:
            raise E2AValueError(f"{path}.url", "is empty")
        block = {"type": "resource_link", "uri": url, "name": filename or url}
        if media_type:
            block["mimeType"] = media_type
        if not filename:
            extra["filename"] = None
    else:
        raise E2AValueError(path, "a part has text, raw, url or data")
    if extra:
        block["_meta"] = {META_KEY: extra}
    return block


def a2a_part(block: Any, path: str) -> dict[str, Any]:
    """The A2A part (its JSON) of one ACP content block: the inverse of ``acp_block``, and for a block
    an agent wrote, the nearest part (an unknown block type as a data part holding the block)."""
    if not isinstance(block, dict):
        raise E2ATypeError(path, f"an ACP content block is an object, got {type_name(block)}")
    meta = block.get("_meta")
    extra = meta.get(META_KEY) if isinstance(meta, dict) else None
    extra = dict(extra) if isinstance(extra, dict) else {}
    kind = block.get("type")
    part: dict[str, Any]
    if kind == "text":
        text = _string(block.get("text"), f"{path}.text")
        part = (
            {"data": jsontext.loads(text, f"{path}.text")} if extra.pop("part", None) == DATA_PART else {"text": text}
        )
    elif kind in ("image", "audio"):
        part = {"raw": _base64(block.get("data"), f"{path}.data")}
        _media_type(part, block.get("mimeType"))
    elif kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            raise E2ATypeError(f"{path}.resource", f"expected an object, got {type_name(resource)}")
        uri = _string(resource.get("uri"), f"{path}.resource.uri")
        if "blob" in resource:
            part = {"raw": _base64(resource["blob"], f"{path}.resource.blob")}
        else:
            part = {"text": _string(resource.get("text"), f"{path}.resource.text")}
        part["filename"] = _file_name(uri)
        _media_type(part, resource.get("mimeType"))
    elif kind == "resource_link":
        part = {"url": _string(block.get("uri"), f"{path}.uri")}
        name = block.get("name")
        if isinstance(name, str) and name:
            part["filename"] = name
        _media_type(part, block.get("mimeType"))
    else:
        return {"data": block}
    part.update(extra)
    return {key: value for key, value in part.items() if value is not None}


def _file_name(uri: str) -> str:
    """A resource's file name: the last segment of its URI."""
    return uri.rstrip("/").rpartition("/")[2] or uri


def _media_type(part: dict[str, Any], value: Any) -> None:
    if isinstance(value, str) and value:
        part["mediaType"] = value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise E2ATypeError(path, f"expected a string, got {type_name(value)}")
    return value


def _base64(value: Any, path: str) -> str:
    text = _string(value, path)
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise E2AValueError(path, "is not base64") from None
    return text
