"""What every service of the stack serves: gRPC health and reflection."""

from __future__ import annotations

import asyncio

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from tests.stack import Stack


async def test_every_service_serves_health_and_reflection(stack: Stack) -> None:
    expected = {
        "fusion": "tribrid.v1.Fusion",
        "vector": "tribrid.v1.VectorSearch",
        "sparse": "tribrid.v1.SparseSearch",
        "graph": "tribrid.v1.GraphSearch",
        "indexer": "tribrid.v1.Indexer",
    }
    for name, full_name in expected.items():
        async with stack.channel(name) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=full_name), timeout=5
            )
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        # Reflection, as grpcurl uses it. The descriptor database client is synchronous, so it runs
        # in a thread: blocking this loop would starve the servers that share it.
        services, service_names = await asyncio.to_thread(_reflect, stack.servers[name].port, full_name)
        assert full_name in services
        assert full_name.rsplit(".", 1)[1] in service_names


def _reflect(port: int, full_name: str) -> tuple[list[str], list[str]]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as sync_channel:
        db = ProtoReflectionDescriptorDatabase(sync_channel)
        file_proto = db.FindFileContainingSymbol(full_name)
        return list(db.get_services()), [s.name for s in file_proto.service]
