"""Conventions every .proto of e2a.v1 follows: one JSON naming rule, one set of language options."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.protobuf.descriptor import Descriptor, FileDescriptor

from e2a.v1 import agent_service_pb2, codec_service_pb2, conversion_service_pb2, e2a_pb2

FILES = [
    e2a_pb2.DESCRIPTOR,
    agent_service_pb2.DESCRIPTOR,
    codec_service_pb2.DESCRIPTOR,
    conversion_service_pb2.DESCRIPTOR,
]
#: Fields whose E2A name is not a valid proto field name.
RENAMED = {"meta": "_meta"}


def _messages(descriptors: Iterator[Descriptor]) -> Iterator[Descriptor]:
    for message in descriptors:
        yield message
        yield from _messages(iter(message.nested_types))


@pytest.mark.parametrize("file", FILES, ids=[file.name for file in FILES])
def test_json_names_are_the_snake_case_field_names(file: FileDescriptor) -> None:
    # The service messages too, so JSON tooling (buf curl, protojson) prints one convention throughout.
    for message in _messages(iter(file.message_types_by_name.values())):
        for field in message.fields:
            assert field.json_name == RENAMED.get(field.name, field.name), f"{message.full_name}.{field.name}"


@pytest.mark.parametrize("file", FILES, ids=[file.name for file in FILES])
def test_language_options_are_set_alike(file: FileDescriptor) -> None:
    options = file.GetOptions()
    assert (options.java_package, options.java_multiple_files) == ("io.e2a.v1", True)
    assert options.java_outer_classname.endswith("Proto")
    assert (options.csharp_namespace, options.php_namespace, options.ruby_package) == ("E2A.V1", "E2A\\V1", "E2A::V1")
    assert (options.objc_class_prefix, options.swift_prefix) == ("E2A", "E2A")
    assert options.go_package == "e2agrpc/gen/go/e2a/v1;e2av1"


def test_outer_class_names_do_not_clash() -> None:
    names = [file.GetOptions().java_outer_classname for file in FILES]
    assert len(set(names)) == len(names)
