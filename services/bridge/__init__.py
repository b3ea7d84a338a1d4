"""HTTP/JSON bridge: the public gRPC RPCs (their `google.api.http` rules) as JSON routes."""
