"""The field-table plugin (codegen/e2a_tables.py) on the repository's schema and on broken copies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2

from codegen import e2a_tables

pytestmark = [pytest.mark.subprocess]  # runs protoc with the table plugin

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[descriptor_pb2.FileDescriptorProto]:
    out = tmp_path_factory.mktemp("descriptors") / "set.pb"
    protos = sorted(str(path.relative_to(REPO_ROOT / "proto")) for path in (REPO_ROOT / "proto").rglob("*.proto"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            "proto",
            "--include_imports",
            f"--descriptor_set_out={out}",
            *protos,
        ],
        cwd=REPO_ROOT,
        check=True,
        timeout=120,
    )
    return list(descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file)


def _generate(files: list[descriptor_pb2.FileDescriptorProto], target: str) -> plugin_pb2.CodeGeneratorResponse:
    request = plugin_pb2.CodeGeneratorRequest(parameter=f"target={target}")
    request.proto_file.extend(files)
    return e2a_tables.generate(request)


def _field(files: list[descriptor_pb2.FileDescriptorProto], name: str) -> descriptor_pb2.FieldDescriptorProto:
    record = next(m for f in files if f.package == "e2a.v1" for m in f.message_type if m.name == "E2AEnvelope")
    return next(field for field in record.field if field.name == name)


@pytest.mark.parametrize("target", sorted(e2a_tables.TARGETS))
def test_each_target_writes_its_table_of_both_records(
    files: list[descriptor_pb2.FileDescriptorProto], target: str
) -> None:
    response = _generate(files, target)
    assert not response.error
    (generated,) = response.file
    assert generated.name == e2a_tables.TARGETS[target][0]
    assert "acp_meta" in generated.content  # the last field of both records


def test_the_tables_follow_the_schema(files: list[descriptor_pb2.FileDescriptorProto]) -> None:
    schema = e2a_tables.read_schema(files)
    envelope, response = schema.records
    assert (envelope.name, response.name) == ("E2AEnvelope", "E2AResponse")
    channel_context = next(item for item in envelope.fields if item.name == "channel_context")
    assert (channel_context.legacy_reader, channel_context.fallback_keys) == ("channel_context", ("metadata", "app_id"))
    assert schema.enums["e2a.v1.IdentityOrigin"].values[1] == ("user", 2)


def test_an_unknown_target_is_an_error(files: list[descriptor_pb2.FileDescriptorProto]) -> None:
    assert "target= must be one of" in _generate(files, "cobol").error


def test_a_record_field_without_options_is_an_error(files: list[descriptor_pb2.FileDescriptorProto]) -> None:
    copies = [descriptor_pb2.FileDescriptorProto.FromString(file.SerializeToString()) for file in files]
    _field(copies, "chat_id").ClearField("options")
    assert "E2AEnvelope: fields ['chat_id'] have no (e2a.v1.json) option" in _generate(copies, "go").error


def test_a_legacy_reader_that_is_no_name_is_an_error(tmp_path: Path) -> None:
    proto = tmp_path / "e2a" / "v1"
    proto.mkdir(parents=True)
    (proto / "options.proto").write_text((REPO_ROOT / "proto/e2a/v1/options.proto").read_text())
    (proto / "e2a.proto").write_text(
        (REPO_ROOT / "proto/e2a/v1/e2a.proto").read_text().replace('legacy_reader: "channel"', 'legacy_reader: "x-y"')
    )
    out = tmp_path / "set.pb"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I",
            str(tmp_path),
            "--include_imports",
            f"--descriptor_set_out={out}",
            "e2a/v1/e2a.proto",
        ],
        check=True,
        timeout=120,
    )
    files = list(descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file)
    assert "legacy reader 'x-y' is no name" in _generate(files, "java").error
