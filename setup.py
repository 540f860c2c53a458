"""The one C extension; everything else about the package is in pyproject.toml.

``e2a_grpc._canonical`` checks that JSON texts and protobuf messages are in the form the codec writes;
those checks run over every byte of a message, so they are in C (see the source).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("e2a_grpc._canonical", sources=["src/e2a_grpc/_canonical.c"], extra_compile_args=["-Wall", "-Wextra"])
    ]
)
