"""Python clients of the e2a-grpc service: ``ConversionClient`` and the checked Chat stream."""

from e2a_grpc.client.chat import achat, chat
from e2a_grpc.client.conversion import ConversionClient, ServiceError

__all__ = ["ConversionClient", "ServiceError", "achat", "chat"]
