"""The C extensions; everything else about the package is in pyproject.toml.

``e2a_grpc._canonical`` checks that JSON texts and protobuf messages are in the form the codec writes;
those checks run over every byte of a message, so they are in C. ``e2a_grpc.chat._frame_bytes`` assembles
a Chat stream's text delta frames, once per frame on the event loop's thread (see the sources).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(name, sources=[source], extra_compile_args=["-Wall", "-Wextra"])
        for name, source in (
            ("e2a_grpc._canonical", "src/e2a_grpc/_canonical.c"),
            ("e2a_grpc.chat._frame_bytes", "src/e2a_grpc/chat/_frame_bytes.c"),
        )
    ]
)
