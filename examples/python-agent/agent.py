#!/usr/bin/env python3
"""An agent over the gateway's gRPC API, with Debian's python3-grpcio and python3-protobuf.

It lists the offices the key may enter, the tools of the first computer it finds,
and calls one tool (docs__search_documents, against `make run`'s demo):

    apt-get install python3-grpcio python3-protobuf
    make run                                   # terminal 1
    python3 examples/python-agent/agent.py     # terminal 2

Settings come from the environment: SMCP_ADDR (127.0.0.1:8080), SMCP_API_KEY
(smcp-demo-key), SMCP_TOOL (docs__search_documents) and SMCP_PARAMS (a JSON object,
{"query": "revenue"}).

No generated code: the message types come from smcp.binpb beside this file, the
descriptor set of proto/ that `make generate` writes (the protoc in Debian's
python3-grpc-tools 1.14 refuses proto3 optional fields). Each method is called by its path,
/smcp.v1.AgentService/<Method>, as generated stubs would.
"""

import json
import os
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

HERE = os.path.dirname(os.path.abspath(__file__))


def load_types(path):
    """Return a function that gives the message class of a full type name."""
    with open(path, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in files.file:  # dependencies first, as buf writes them
        pool.Add(fd)
    factory = message_factory.MessageFactory(pool)

    def message(name):
        descriptor = pool.FindMessageTypeByName(name)
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
            return message_factory.GetMessageClass(descriptor)
        return factory.GetPrototype(descriptor)

    return message


class AgentService:
    """The unary methods of smcp.v1.AgentService this example needs."""

    def __init__(self, channel, message, api_key):
        self._channel = channel
        self._message = message
        self._metadata = (("x-api-key", api_key),)

    def call(self, method, request, timeout=30):
        response = self._message(f"smcp.v1.{method}Response")
        rpc = self._channel.unary_unary(
            f"/smcp.v1.AgentService/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response.FromString,
        )
        return rpc(request, metadata=self._metadata, timeout=timeout)

    def request(self, method, **fields):
        return json_format.ParseDict(fields, self._message(f"smcp.v1.{method}Request")())


def main():
    addr = os.environ.get("SMCP_ADDR", "127.0.0.1:8080")
    key = os.environ.get("SMCP_API_KEY", "smcp-demo-key")
    tool = os.environ.get("SMCP_TOOL", "docs__search_documents")
    params = json.loads(os.environ.get("SMCP_PARAMS", '{"query": "revenue"}'))

    message = load_types(os.path.join(HERE, "smcp.binpb"))
    with grpc.insecure_channel(addr) as channel:
        api = AgentService(channel, message, key)

        offices = api.call("ListOffices", api.request("ListOffices")).offices
        computers = [(o.office_id, c) for o in offices for c in o.computers]
        print(f"offices: {', '.join(o.office_id for o in offices) or '(none)'}")
        if not computers:
            print("no computer has joined an office this key may enter", file=sys.stderr)
            return 1
        office, computer = computers[0]

        tools = api.call("GetTools", api.request("GetTools", office_id=office, computer=computer)).tools
        print(f"tools of {computer} in {office}: {', '.join(t.name for t in tools)}")

        call = api.request("CallTool", office_id=office, computer=computer, tool_name=tool, params=params, timeout=30)
        result = api.call("CallTool", call, timeout=60).result
        print(f"{tool} {json.dumps(params, separators=(',', ':'))}: is_error={result.is_error}")
        for block in result.content:  # MCP content blocks, google.protobuf.Struct
            block = json_format.MessageToDict(block)
            print(block.get("text", json.dumps(block)))
        return 1 if result.is_error else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except grpc.RpcError as err:
        print(f"gRPC error: {err.code().name}: {err.details()}", file=sys.stderr)
        sys.exit(1)
